package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A location URI with credentials is refused, and the error does not
// repeat the secret: before, s3://KEY:SECRET@bucket/prefix was accepted and
// the secret reached the logs, the textfile and the Pushgateway's root label.
func TestCredentialsInLocationURIsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(c *Config)
	}{
		{"roots[0].uri", func(c *Config) { c.Roots = []Root{{URI: "s3://AKIAEXAMPLE:SeCrEt@bucket/prefix"}} }},
		{"discover[0].uri", func(c *Config) { c.Discover = []Root{{URI: "s3://AKIAEXAMPLE:SeCrEt@bucket/tenants/*"}} }},
		{"audit.location", func(c *Config) { c.Audit.Location = "s3://AKIAEXAMPLE:SeCrEt@bucket/audit" }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			c := Default()
			tc.set(&c)
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.key)
			require.Contains(t, err.Error(), "storage options")
			require.NotContains(t, err.Error(), "SeCrEt")
			require.NotContains(t, err.Error(), "AKIAEXAMPLE")
		})
	}
}
