package config

import (
	"maps"

	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// RedactedValue is the placeholder for secret values.
const RedactedValue = "REDACTED"

// secretOptions are the storage options whose values never reach logs.
var secretOptions = []string{s3.OptSecretAccessKey, s3.OptSessionToken}

// Redacted returns a deep copy safe to log or print: secret storage options
// (aws_secret_access_key, aws_session_token) read "REDACTED" and a password
// in the pushgateway URL is masked. c itself is not changed.
func (c Config) Redacted() Config {
	out := c
	out.Roots = redactRoots(c.Roots)
	out.Discover = redactRoots(c.Discover)
	out.Audit.StorageOptions = redactOptions(c.Audit.StorageOptions)
	if c.Metrics.Pushgateway != "" {
		out.Metrics.Pushgateway = redactURL(c.Metrics.Pushgateway)
	}
	if c.Safety.RetentionEnabled != nil {
		out.Safety.RetentionEnabled = boolPtr(*c.Safety.RetentionEnabled)
	}
	if c.Metrics.PerRootLabels != nil {
		out.Metrics.PerRootLabels = boolPtr(*c.Metrics.PerRootLabels)
	}
	return out
}

func redactRoots(rs []Root) []Root {
	if rs == nil {
		return nil
	}
	out := make([]Root, len(rs))
	for i, r := range rs {
		out[i] = Root{URI: r.URI, StorageOptions: redactOptions(r.StorageOptions)}
	}
	return out
}

func redactOptions(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for _, k := range secretOptions {
		if v, ok := out[k]; ok && v != "" {
			out[k] = RedactedValue
		}
	}
	return out
}
