package config

import (
	"maps"

	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// RedactedValue is the placeholder for secret values.
const RedactedValue = "REDACTED"

// Redacted returns a deep copy safe to log or print: the storage options
// a backend declares secret (aws_secret_access_key, aws_session_token) read
// "REDACTED" and a password in the pushgateway URL is masked. c itself is
// not changed.
func (c Config) Redacted() Config {
	out := c
	out.Roots = redactRoots(c.Roots)
	out.Discover = redactRoots(c.Discover)
	out.Audit.StorageOptions = redactOptions(c.Audit.StorageOptions)
	if c.Metrics.Pushgateway != "" {
		out.Metrics.Pushgateway = redactURL(c.Metrics.Pushgateway)
	}
	if c.Safety.DeletionsEnabled != nil {
		out.Safety.DeletionsEnabled = boolPtr(*c.Safety.DeletionsEnabled)
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
	backends := all.Default()
	for k, v := range out {
		if v != "" && backends.IsSecretOption(k) {
			out[k] = RedactedValue
		}
	}
	return out
}
