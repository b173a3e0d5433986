package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/all"
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

// An abfss:// root writes its container where a URL carries a user name
// (abfss://container@account.dfs.core.windows.net/prefix): that is no
// credential, and the root is accepted wherever a root is. A password
// there still is one.
func TestABFSSContainerIsNoCredential(t *testing.T) {
	const uri = "abfss://lake@acct.dfs.core.windows.net/db"
	for _, tc := range []struct {
		key string
		set func(c *Config, uri string)
	}{
		{"roots[0].uri", func(c *Config, uri string) { c.Roots = []Root{{URI: uri}} }},
		{"discover[0].uri", func(c *Config, uri string) { c.Discover = []Root{{URI: uri + "/*/"}} }},
		{"audit.location", func(c *Config, uri string) { c.Audit.Location = uri + "-audit" }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			c := Default()
			tc.set(&c, uri)
			require.NoError(t, c.Validate())

			c = Default()
			tc.set(&c, "abfss://lake:SeCrEt@acct.dfs.core.windows.net/db")
			err := c.Validate()
			require.ErrorContains(t, err, tc.key)
			require.ErrorContains(t, err, "credentials in a location URI are refused")
			require.NotContains(t, err.Error(), "SeCrEt")
		})
	}
	require.NoError(t, CheckNoCredentials("--root", uri))
	require.Error(t, CheckNoCredentials("--root", "s3://lake@bucket/db"), "a user name in an s3:// URI is still refused")
}

// A bad location names every form a backend declares, in roots and in
// audit.location alike: the list comes from the registry, so a new backend
// cannot be missing from it.
func TestBadLocationListsEveryForm(t *testing.T) {
	for key, set := range map[string]func(c *Config){
		"roots[0].uri":   func(c *Config) { c.Roots = []Root{{URI: "relative/db"}} },
		"audit.location": func(c *Config) { c.Audit.Location = "relative/audit" },
	} {
		c := Default()
		set(&c)
		err := c.Validate()
		require.ErrorContains(t, err, key)
		for _, f := range all.Default().Forms() {
			require.ErrorContains(t, err, f.Syntax, key)
		}
	}
}

// TestDiscoverParentKeepsTheQuery: an s3+ddb:// pattern's query names the
// roots' commit table, not a path: the parent keeps it, and so every child.
func TestDiscoverParentKeepsTheQuery(t *testing.T) {
	for _, tc := range []struct{ pattern, parent, child string }{
		{"s3+ddb://b/tenants/*/?ddbTableName=lance", "s3+ddb://b/tenants?ddbTableName=lance", "s3+ddb://b/tenants/t1?ddbTableName=lance"},
		{"s3+ddb://b/tenants/*?ddbTableName=lance", "s3+ddb://b/tenants?ddbTableName=lance", "s3+ddb://b/tenants/t1?ddbTableName=lance"},
		{"s3+ddb://b/*/?ddbTableName=lance", "s3+ddb://b?ddbTableName=lance", "s3+ddb://b/t1?ddbTableName=lance"},
		{"s3://b/tenants/*/", "s3://b/tenants", "s3://b/tenants/t1"},
	} {
		loc, err := DiscoverParent(tc.pattern)
		require.NoError(t, err, tc.pattern)
		require.Equal(t, tc.parent, loc.String(), tc.pattern)
		require.Equal(t, tc.child, loc.Child("t1").String(), tc.pattern)
	}
	_, err := DiscoverParent("s3+ddb://b/tenants/*/x?ddbTableName=lance")
	require.ErrorContains(t, err, `the last path segment must be exactly "*"`)
	_, err = DiscoverParent("s3+ddb://b/tenants/*/")
	require.ErrorContains(t, err, "missing ?ddbTableName")
}
