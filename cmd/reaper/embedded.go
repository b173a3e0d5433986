package main

// The release image has no base image (deploy/image): no /etc/ssl/certs and
// no /usr/share/zoneinfo. The binary carries both as fallbacks, used only
// where the system has none, so TLS to S3, GCS and Azure and a CRON_TZ=
// schedule work on scratch as they do on a full distribution. SSL_CERT_FILE
// and SSL_CERT_DIR still replace the roots (a private CA), and ZONEINFO the
// zones.
import (
	_ "time/tzdata"

	_ "golang.org/x/crypto/x509roots/fallback"
)
