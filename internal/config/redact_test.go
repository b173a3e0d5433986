package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestRedacted(t *testing.T) {
	t.Parallel()
	secret := map[string]string{
		"aws_access_key_id":     "AKIAEXAMPLE",
		"aws_secret_access_key": "s3cr3t-key",
		"aws_session_token":     "s3cr3t-token",
		"aws_region":            "eu-west-1",
	}
	c := valid()
	c.Roots = []Root{{URI: "s3://b/db", StorageOptions: secret}}
	c.Discover = []Root{{URI: "s3://b/t/*/", StorageOptions: secret}}
	c.Audit = Audit{Location: "s3://b/audit", StorageOptions: secret}
	c.Metrics.Pushgateway = "https://u:s3cr3t-pw@pg:9091"

	r := c.Redacted()
	out, err := yaml.Marshal(r)
	require.NoError(t, err)
	for _, s := range []string{"s3cr3t-key", "s3cr3t-token", "s3cr3t-pw"} {
		require.NotContains(t, string(out), s)
		require.NotContains(t, fmt.Sprintf("%+v", r), s)
	}
	require.Equal(t, RedactedValue, r.Roots[0].StorageOptions["aws_secret_access_key"])
	require.Equal(t, RedactedValue, r.Discover[0].StorageOptions["aws_session_token"])
	require.Equal(t, RedactedValue, r.Audit.StorageOptions["aws_secret_access_key"])
	require.Equal(t, "AKIAEXAMPLE", r.Roots[0].StorageOptions["aws_access_key_id"], "the key id is not secret")
	require.Equal(t, "eu-west-1", r.Roots[0].StorageOptions["aws_region"])

	// The original is untouched.
	require.Equal(t, "s3cr3t-key", c.Roots[0].StorageOptions["aws_secret_access_key"])
	require.Equal(t, "https://u:s3cr3t-pw@pg:9091", c.Metrics.Pushgateway)
	*r.Safety.RetentionEnabled = false
	require.True(t, *c.Safety.RetentionEnabled, "no shared pointers")

	require.Equal(t, Default(), Default().Redacted(), "nothing to redact")
}

// The GCS inline key is secret by its backend's descriptor; the key file's
// path is not.
func TestRedactedGCS(t *testing.T) {
	t.Parallel()
	c := valid()
	c.Roots = []Root{{URI: "gs://b/db", StorageOptions: map[string]string{"google_service_account_key": `{"private_key":"s3cr3t-pem"}`}}}
	c.Audit = Audit{Location: "gs://b/audit", StorageOptions: map[string]string{"google_service_account": "/etc/sa.json"}}
	r := c.Redacted()
	out, err := yaml.Marshal(r)
	require.NoError(t, err)
	require.NotContains(t, string(out), "s3cr3t-pem")
	require.Equal(t, RedactedValue, r.Roots[0].StorageOptions["google_service_account_key"])
	require.Equal(t, "/etc/sa.json", r.Audit.StorageOptions["google_service_account"])
}
