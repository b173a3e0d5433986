package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A root's retention keys replace the top-level ones they name; a
// discovered root gets its pattern's; everything else is inherited.
func TestRetentionFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
retention:
  older_than: 30d
  keep_versions: 3
roots:
  - uri: /data/a
  - uri: /data/b
    retention:
      enabled: true
discover:
  - uri: /data/tenants/*/
    retention:
      enabled: true
      older_than: 2d
      delete_unverified: true
`), 0o600))
	c, err := Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.NoError(t, c.ValidateForPass())

	a := c.RetentionFor(c.Roots[0].Retention)
	require.False(t, a.Enabled, "off unless switched on")
	require.Equal(t, 30*24*time.Hour, a.OlderThan.D())

	b := c.RetentionFor(c.Roots[1].Retention)
	require.Equal(t, Retention{Enabled: true, OlderThan: Duration(30 * 24 * time.Hour), KeepVersions: 3,
		UnverifiedAfter: Duration(7 * 24 * time.Hour)}, b)
	p := b.Policy()
	require.Equal(t, 30*24*time.Hour, p.OlderThan)
	require.Equal(t, 3, p.KeepVersions)

	d := c.RetentionFor(c.Discover[0].Retention)
	require.Equal(t, Retention{Enabled: true, OlderThan: Duration(2 * 24 * time.Hour), KeepVersions: 3,
		DeleteUnverified: true, UnverifiedAfter: Duration(7 * 24 * time.Hour)}, d)
}

// REAPER_RETENTION_* set the top-level section, as every other key.
func TestRetentionFromEnv(t *testing.T) {
	env := map[string]string{"REAPER_RETENTION_ENABLED": "true", "REAPER_RETENTION_OLDER_THAN": "14d"}
	c, err := Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	r := c.RetentionFor(RetentionOverride{})
	require.True(t, r.Enabled)
	require.Equal(t, 14*24*time.Hour, r.OlderThan.D())
}

// A retention that could delete what may still be read, or keep nothing,
// is refused with the key of the root it applies to.
func TestValidateRetention(t *testing.T) {
	on := true
	short := Duration(10 * time.Minute)
	zero := 0
	for _, tc := range []struct {
		name string
		edit func(*Config)
		key  string
		fix  string
	}{
		{"keep nothing", func(c *Config) { c.Retention.KeepVersions = 0 }, "retention.keep_versions", "newest version"},
		{"unverified_after zero", func(c *Config) { c.Retention.UnverifiedAfter = 0 }, "retention.unverified_after", "7d"},
		{"older_than zero", func(c *Config) { c.Retention.Enabled = true; c.Retention.OlderThan = 0 }, "retention.older_than", "7d"},
		{"older_than below the floor", func(c *Config) { c.Retention.Enabled = true; c.Retention.OlderThan = short },
			"retention.older_than", "allow_short_ttl"},
		{"unverified_after below the floor: an index build in progress is that young", func(c *Config) {
			c.Retention.Enabled = true
			c.Retention.UnverifiedAfter = Duration(2 * time.Second)
		}, "retention.unverified_after", "allow_short_ttl"},
		{"a root's own, below the floor", func(c *Config) {
			c.Roots[0].Retention = RetentionOverride{Enabled: &on, OlderThan: &short}
		}, "roots[0].retention.older_than", "safety.min_ttl"},
		{"a pattern's keep_versions", func(c *Config) {
			c.Discover = []Root{{URI: "/data/t/*/", Retention: RetentionOverride{KeepVersions: &zero}}}
		}, "discover[0].retention.keep_versions", "1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			err := c.Validate()
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%v", err)
			require.Equal(t, tc.key, ve.Key)
			require.Contains(t, ve.Fix, tc.fix)
		})
	}
	c := valid()
	c.Retention.Enabled, c.Retention.OlderThan, c.Safety.AllowShortTTL = true, short, true
	require.NoError(t, c.Validate(), "allow_short_ttl lets a short older_than through, as it does a TTL")
	c = valid()
	c.Retention.OlderThan = 0
	require.NoError(t, c.Validate(), "older_than of a disabled retention is not read")
	c = valid()
	c.Retention.Enabled, c.Retention.UnverifiedAfter, c.Retention.DeleteUnverified = true, Duration(time.Second), true
	require.NoError(t, c.Validate(), "delete_unverified is its own explicit choice")
}

// The daemon's start line names every root retention cleans, or says off.
func TestRetentionSummary(t *testing.T) {
	on := true
	c := valid()
	require.Equal(t, "off", c.RetentionSummary())
	c.Roots = append(c.Roots, Root{URI: "s3://b/db", Retention: RetentionOverride{Enabled: &on}})
	require.Equal(t, "on for s3://b/db (older_than 7d, keep_versions 1)", c.RetentionSummary())
	c.Retention.Enabled = true
	require.Equal(t, "on for /var/lib/lancedb (older_than 7d, keep_versions 1); s3://b/db (older_than 7d, keep_versions 1)", c.RetentionSummary())
	c.Roots = nil
	require.Equal(t, "on for every root (older_than 7d, keep_versions 1)", c.RetentionSummary())
}

// Namespaces: per root, the first entry matching a table's namespace (or
// one enclosing it) applies its keys over the root's; root tables take the
// root's.
func TestRetentionForNamespaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
retention:
  older_than: 30d
roots:
  - uri: /data/a
    retention:
      namespaces:
        - match: "tenant_*"
          enabled: true
  - uri: /data/b
    retention:
      enabled: true
      namespaces:
        - match: staging
          enabled: false
        - match: "prod$analytics"
          older_than: 2d
`), 0o600))
	c, err := Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.NoError(t, c.ValidateForPass())

	a := c.RetentionFor(c.Roots[0].Retention)
	require.False(t, a.Enabled, "root tables: off")
	require.True(t, a.AnyEnabled())
	require.True(t, a.ForNamespace([]string{"tenant_a"}).Enabled)
	require.True(t, a.ForNamespace([]string{"tenant_a", "sub"}).Enabled, "a namespace nested in a matching one")
	require.False(t, a.ForNamespace([]string{"staging"}).Enabled)
	require.False(t, a.ForNamespace(nil).Enabled)

	b := c.RetentionFor(c.Roots[1].Retention)
	require.True(t, b.ForNamespace(nil).Enabled)
	require.True(t, b.ForNamespace([]string{"tenant_a"}).Enabled, "no entry matches: the root's keys apply")
	require.False(t, b.ForNamespace([]string{"staging", "x"}).Enabled)
	require.Equal(t, 2*24*time.Hour, b.ForNamespace([]string{"prod", "analytics"}).OlderThan.D())
	require.Equal(t, 30*24*time.Hour, b.ForNamespace([]string{"prod"}).OlderThan.D())
	require.Contains(t, c.RetentionSummary(), "namespaces staging off")

	for _, bad := range []string{`match: ""`, `match: "[a"`, "match: t\n      older_than: 1s\n      enabled: true"} {
		require.NoError(t, os.WriteFile(path, []byte("roots:\n  - uri: /data/a\n    retention:\n      namespaces:\n        - "+strings.ReplaceAll(bad, "\n      ", "\n          ")+"\n"), 0o600))
		c, err := Load(path, func(string) (string, bool) { return "", false })
		if err == nil {
			err = c.ValidateForPass()
		}
		require.ErrorContains(t, err, "roots[0].retention.namespaces[0]", bad)
	}
}
