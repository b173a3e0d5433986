package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("", nil)
	require.NoError(t, err)
	require.Equal(t, Default(), c)
	require.NoError(t, c.Validate())
	require.Error(t, c.ValidateForPass(), "defaults have no root")

	d := Default()
	require.Equal(t, "@every 10m", d.Schedule)
	require.Equal(t, ":9090", d.Listen)
	require.Equal(t, 30*time.Second, d.ShutdownGrace.D())
	require.Equal(t, Log{Format: "json", Level: "info"}, d.Log)
	require.Equal(t, 7*24*time.Hour, d.Defaults.TTL.D())
	require.Equal(t, 5*time.Minute, d.Defaults.SkewAllowance.D())
	require.Equal(t, 2*time.Minute, d.Defaults.LeaseTTL.D())
	require.Equal(t, 4, d.Limits.TableConcurrency)
	require.Equal(t, 4, d.Limits.DeleteConcurrency)
	require.Equal(t, 2*time.Minute, d.Limits.RetryMaxElapsed.D())
	require.Equal(t, time.Hour, d.Safety.MinTTL.D())
	require.Equal(t, 50.0, d.Safety.BlastRadiusMaxPercent)
	require.True(t, *d.Safety.RetentionEnabled)
	require.True(t, *d.Metrics.PerRootLabels)
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	p := writeFile(t, `
schedule: "@hourly"
dry_run: true
limits:
  table_concurrency: 8
defaults:
  ttl: 1d12h
safety:
  retention_enabled: false
roots:
  - uri: s3://bkt/db
    storage_options: {aws_region: eu-west-1}
`)
	c, err := Load(p, nil)
	require.NoError(t, err)
	require.Equal(t, "@hourly", c.Schedule)
	require.True(t, c.DryRun)
	require.Equal(t, 8, c.Limits.TableConcurrency)
	require.Equal(t, 4, c.Limits.DeleteConcurrency, "unset keys keep their defaults")
	require.Equal(t, 36*time.Hour, c.Defaults.TTL.D())
	require.False(t, *c.Safety.RetentionEnabled)
	require.Equal(t, []Root{{URI: "s3://bkt/db", StorageOptions: map[string]string{"aws_region": "eu-west-1"}}}, c.Roots)
	require.NoError(t, c.ValidateForPass())
}

func TestLoadEmptyFileAndNull(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, "# nothing\n"), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), c)

	c, err = Load(writeFile(t, "safety:\n  retention_enabled: null\n"), nil)
	require.NoError(t, err)
	require.True(t, *c.Safety.RetentionEnabled, "null means the default")
}

func TestLoadUnknownKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"top level", "schedule: \"@hourly\"\nschedul: x\n", []string{"line 2", `unknown key "schedul"`, "at the top level", "did you mean schedule?"}},
		{"nested", "limits:\n  table_concurrency: 2\n  table_concurency: 3\n", []string{"line 3", `unknown key "limits.table_concurency"`, "in limits", "did you mean table_concurrency?"}},
		{"in a list", "roots:\n  - uri: /a\n  - url: /b\n", []string{"line 3", `unknown key "roots[1].url"`, "did you mean uri?"}},
		{"far from anything", "limits:\n  zzzzzzzzzzzz: 1\n", []string{"line 2", "accepted: table_concurrency, delete_concurrency"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.body)
			_, err := Load(p, nil)
			require.Error(t, err)
			require.ErrorContains(t, err, "config file "+p)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"bad duration", "defaults:\n  ttl: 7 days\n", `line 2: defaults.ttl: duration "7 days"`},
		{"negative duration", "jitter: -1m\n", "negative durations are not allowed"},
		{"type", "limits:\n  table_concurrency: lots\n", "line 2: limits.table_concurrency: cannot unmarshal !!str `lots` into int"},
		{"not a mapping", "- a\n- b\n", "want a mapping"},
		{"two documents", "schedule: \"@hourly\"\n---\nschedule: \"@daily\"\n", "more than one YAML document"},
		{"syntax", "schedule: [\n", "config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.body), nil)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	require.ErrorContains(t, err, "read config file")
	require.ErrorContains(t, err, "missing.yaml")
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	p := writeFile(t, `
schedule: "@hourly"
listen: ":8080"
limits:
  table_concurrency: 8
  delete_concurrency: 6
safety:
  min_ttl: 2h
roots:
  - uri: /from/file
`)
	env := envOf(
		"REAPER_LIMITS_TABLE_CONCURRENCY", "16",
		"REAPER_SAFETY_MIN_TTL", "1d",
		"REAPER_DRY_RUN", "true",
		"REAPER_PAUSED", "1",
		"REAPER_METRICS_PER_ROOT_LABELS", "false",
		"REAPER_ROOTS", "/a, s3://b/c ,",
	)
	c, err := Load(p, env)
	require.NoError(t, err)
	require.Equal(t, "@hourly", c.Schedule, "file over default")
	require.Equal(t, ":8080", c.Listen, "file over default")
	require.Equal(t, 6, c.Limits.DeleteConcurrency, "file over default")
	require.Equal(t, 16, c.Limits.TableConcurrency, "env over file")
	require.Equal(t, 24*time.Hour, c.Safety.MinTTL.D(), "env over file")
	require.True(t, c.DryRun)
	require.True(t, c.Paused)
	require.False(t, *c.Metrics.PerRootLabels)
	require.Equal(t, []Root{{URI: "/a"}, {URI: "s3://b/c"}}, c.Roots, "REAPER_ROOTS replaces the file's roots")
	require.Equal(t, 4, Default().Limits.TableConcurrency, "Default is not aliased")

	// Flags: the CLI calls Set after Load.
	require.NoError(t, c.Set("limits.table_concurrency", "32"))
	require.NoError(t, c.Set("safety.min_ttl", "90m"))
	require.NoError(t, c.Set("roots", "/x"))
	require.Equal(t, 32, c.Limits.TableConcurrency, "flag over env")
	require.Equal(t, 90*time.Minute, c.Safety.MinTTL.D(), "flag over env")
	require.Equal(t, []Root{{URI: "/x"}}, c.Roots)
}

// TestDiscoverOverrides: REAPER_DISCOVER and Set("discover") replace the
// file's patterns, and an empty value clears them (it used to be that no
// variable or flag could).
func TestDiscoverOverrides(t *testing.T) {
	t.Parallel()
	p := writeFile(t, `
roots:
  - uri: /from/file
discover:
  - uri: /tenants/*/
`)
	for _, tc := range []struct {
		name string
		env  func(string) (string, bool)
		set  *string
		want []Root
	}{
		{"file", envOf(), nil, []Root{{URI: "/tenants/*/"}}},
		{"env replaces", envOf("REAPER_DISCOVER", "/a/*/, s3://b/t/*/"), nil, []Root{{URI: "/a/*/"}, {URI: "s3://b/t/*/"}}},
		{"empty env clears", envOf("REAPER_DISCOVER", ""), nil, nil},
		{"set clears", envOf(), new(string), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(p, tc.env)
			require.NoError(t, err)
			if tc.set != nil {
				require.NoError(t, c.Set("discover", *tc.set))
			}
			require.Equal(t, tc.want, c.Discover)
			require.Equal(t, []Root{{URI: "/from/file"}}, c.Roots)
		})
	}
}

func TestEnvErrors(t *testing.T) {
	t.Parallel()
	_, err := Load("", envOf("REAPER_LIMITS_TABLE_CONCURRENCY", "many"))
	require.ErrorContains(t, err, "environment variable REAPER_LIMITS_TABLE_CONCURRENCY")
	require.ErrorContains(t, err, "want a whole number")
	_, err = Load("", envOf("REAPER_DRY_RUN", "yes please"))
	require.ErrorContains(t, err, "REAPER_DRY_RUN")
	require.ErrorContains(t, err, "want true or false")
}

func TestUnknownEnv(t *testing.T) {
	t.Parallel()
	err := UnknownEnv([]string{
		"PATH=/bin", "REAPER_SCHEDULE=@hourly", "REAPER_ROOTS=/a",
		"REAPER_TEST_S3_ENDPOINT=http://x", "REAPER_VERSITYGW=/bin/v", "REAPER_REQUIRE_S3=1",
		"REAPER_REQUIRE_SPIN=1", "REAPER_REQUIRE_MOUNTS=1", "REAPER_CLOCK_OFFSET=-90s",
		"REAPER_LOCAL_CHILD=1", "REAPER_LOCAL_CHILD_ID=2", "REAPER_LOCK_TEST_CHILD=1", "REAPER_LOCK_TEST_DIR=/t",
	})
	require.NoError(t, err)

	err = UnknownEnv([]string{"REAPER_LIMITS_TABLE_CONCURENCY=3", "REAPER_SHCEDULE=x"})
	require.ErrorContains(t, err, "environment variable REAPER_LIMITS_TABLE_CONCURENCY: not a reaper setting; did you mean REAPER_LIMITS_TABLE_CONCURRENCY?")
	require.ErrorContains(t, err, "REAPER_SHCEDULE")

	_, err = LoadEnviron("", []string{"REAPER_DRYRUN=true"})
	require.ErrorContains(t, err, "did you mean REAPER_DRY_RUN?")
	c, err := LoadEnviron("", []string{"REAPER_DRY_RUN=true", "REAPER_LOG_LEVEL=debug"})
	require.NoError(t, err)
	require.True(t, c.DryRun)
	require.Equal(t, "debug", c.Log.Level)
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	names := EnvNames()
	for _, want := range []string{"REAPER_SCHEDULE", "REAPER_LIMITS_TABLE_CONCURRENCY", "REAPER_SAFETY_MIN_TTL",
		"REAPER_DRY_RUN", "REAPER_PAUSED", "REAPER_SHARD_INDEX", "REAPER_SHARD_BY", "REAPER_ROOTS", "REAPER_DISCOVER", "REAPER_AUDIT_LOCATION"} {
		require.Contains(t, names, want)
	}
	require.Len(t, names, len(ScalarKeys())+2, "env names are unique (plus the two list variables)")
	for name := range names {
		require.False(t, ignoredEnvName(name), "%s is both read and ignored", name)
	}
	require.NotContains(t, names, "REAPER_AUDIT_STORAGE_OPTIONS", "maps are not scalars")
}

func TestSet(t *testing.T) {
	t.Parallel()
	c := Default()
	for key, val := range map[string]string{
		"schedule":                       "@daily",
		"jitter":                         "1m",
		"listen":                         "",
		"dry_run":                        "true",
		"log.level":                      "debug",
		"defaults.ttl":                   "2d",
		"shard.count":                    "3",
		"limits.requests_per_second":     "12.5",
		"limits.max_objects_per_pass":    "5000000000",
		"safety.retention_enabled":       "false",
		"safety.blast_radius_max_tables": "10",
		"metrics.pushgateway":            "http://pg:9091",
	} {
		require.NoError(t, c.Set(key, val), "Set(%q, %q)", key, val)
	}
	require.Equal(t, "@daily", c.Schedule)
	require.Equal(t, time.Minute, c.Jitter.D())
	require.Empty(t, c.Listen)
	require.True(t, c.DryRun)
	require.Equal(t, 48*time.Hour, c.Defaults.TTL.D())
	require.Equal(t, 12.5, c.Limits.RequestsPerSecond)
	require.Equal(t, int64(5000000000), c.Limits.MaxObjectsPerPass)
	require.False(t, *c.Safety.RetentionEnabled)
	require.True(t, *Default().Safety.RetentionEnabled)
	require.Equal(t, 10, c.Safety.BlastRadiusMaxTables)

	for _, tc := range []struct{ key, val, want string }{
		{"limits.table_concurency", "1", "did you mean limits.table_concurrency?"},
		{"limits", "1", "not a settable key"},
		{"roots.uri", "/a", "not a settable key"},
		{"audit.storage_options", "a=b", "not a settable key"},
		{"jitter", "-1s", "negative"},
		{"limits.requests_per_second", "NaN", "want a number"},
		{"shard.index", "1.5", "want a whole number"},
	} {
		err := c.Set(tc.key, tc.val)
		require.ErrorContains(t, err, tc.want, "Set(%q, %q)", tc.key, tc.val)
		require.ErrorContains(t, err, tc.key)
	}
}

func TestJobCompletionIndex(t *testing.T) {
	t.Parallel()
	sharded := writeFile(t, "shard:\n  count: 4\n")
	c, err := Load(sharded, envOf("JOB_COMPLETION_INDEX", "2"))
	require.NoError(t, err)
	require.Equal(t, 2, c.Shard.Index, "used when shard.index is unset and count > 1")

	c, err = Load("", envOf("JOB_COMPLETION_INDEX", "2"))
	require.NoError(t, err)
	require.Equal(t, 0, c.Shard.Index, "ignored without sharding")

	c, err = Load(writeFile(t, "shard:\n  count: 4\n  index:\n"), envOf("JOB_COMPLETION_INDEX", "2"))
	require.NoError(t, err)
	require.Equal(t, 2, c.Shard.Index, "an empty index is unset")

	c, err = Load(writeFile(t, "shard:\n  count: 4\n  index: 0\n"), envOf("JOB_COMPLETION_INDEX", "2"))
	require.NoError(t, err)
	require.Equal(t, 0, c.Shard.Index, "an explicit 0 wins")

	c, err = Load(writeFile(t, "shard:\n  count: 4\n  index: 1\n"), envOf("JOB_COMPLETION_INDEX", "2"))
	require.NoError(t, err)
	require.Equal(t, 1, c.Shard.Index, "the file wins")

	c, err = Load(sharded, envOf("JOB_COMPLETION_INDEX", "2", "REAPER_SHARD_INDEX", "3"))
	require.NoError(t, err)
	require.Equal(t, 3, c.Shard.Index, "REAPER_SHARD_INDEX wins")

	// A flag sets the count after Load: the CLI re-applies the index.
	env := envOf("JOB_COMPLETION_INDEX", "5")
	c, err = Load("", env)
	require.NoError(t, err)
	require.NoError(t, c.Set("shard.count", "8"))
	require.NoError(t, c.ApplyJobCompletionIndex(env))
	require.Equal(t, 5, c.Shard.Index)
	require.NoError(t, c.Set("shard.index", "7"))
	require.NoError(t, c.ApplyJobCompletionIndex(env))
	require.Equal(t, 7, c.Shard.Index, "a flag wins")

	_, err = Load(sharded, envOf("JOB_COMPLETION_INDEX", "x"))
	require.ErrorContains(t, err, "JOB_COMPLETION_INDEX")

	c, err = Load(sharded, envOf("JOB_COMPLETION_INDEX", "9"))
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), "shard.index = 9")
}

// shard.by splits roots unless set to table: a file written before the
// key existed still splits roots; the file, REAPER_SHARD_BY and a flag set
// it in the usual order; one replica splits nothing.
func TestShardBy(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, "shard:\n  count: 4\n  index: 1\n"), nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, ShardByRoot, c.Shard.By)
	require.False(t, c.Shard.ByTable())

	byTable := writeFile(t, "shard:\n  count: 4\n  by: table\n")
	c, err = Load(byTable, envOf("JOB_COMPLETION_INDEX", "3"))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.True(t, c.Shard.ByTable())
	require.Equal(t, 3, c.Shard.Index, "JOB_COMPLETION_INDEX gives the index as for roots")

	c, err = Load(byTable, envOf("REAPER_SHARD_BY", "root"))
	require.NoError(t, err)
	require.False(t, c.Shard.ByTable(), "REAPER_SHARD_BY wins over the file")
	require.NoError(t, c.Set("shard.by", "table"))
	require.True(t, c.Shard.ByTable(), "a flag wins")

	c, err = Load(writeFile(t, "shard:\n  by: table\n"), nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.False(t, c.Shard.ByTable(), "one replica splits nothing")
	require.False(t, Shard{Count: 3}.ByTable(), `"" reads as root`)

	c, err = Load(writeFile(t, "shard:\n  count: 2\n  by: tables\n"), nil)
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), `shard.by = "tables"`)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	keys := Keys()
	for _, want := range []string{"schedule", "log.format", "roots", "roots.uri", "roots.storage_options", "discover.uri", "shard.index", "audit.storage_options"} {
		require.Contains(t, keys, want)
	}
	scalars := ScalarKeys()
	require.NotContains(t, scalars, "roots.uri")
	require.NotContains(t, scalars, "log")
	require.Greater(t, len(scalars), 20)
	for _, k := range scalars {
		require.Equal(t, k, strings.ToLower(k))
	}
}

// Kubernetes service links of a Service named "reaper" are not settings.
func TestServiceLinkEnvIgnored(t *testing.T) {
	env := []string{
		"REAPER_SERVICE_HOST=10.0.0.1", "REAPER_SERVICE_PORT=9090", "REAPER_SERVICE_PORT_HTTP_METRICS=9090",
		"REAPER_PORT=tcp://10.0.0.1:9090", "REAPER_PORT_9090_TCP=tcp://10.0.0.1:9090", "REAPER_PORT_9090_TCP_PROTO=tcp",
	}
	require.NoError(t, UnknownEnv(env))
	require.Error(t, UnknownEnv([]string{"REAPER_SCHEDUEL=@hourly"}), "a misspelt setting is still refused")
}

// TestSyntaxErrorLine: a YAML syntax error names the line to fix, not the
// line its enclosing block starts on (yaml.v3 reported line 1 for a bad
// indent on line 3).
func TestSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"list item indent", "roots:\n  - uri: /a\n   storage_options: {}\n", "line 3: did not find expected '-' indicator"},
		{"key dedented", "log:\n  format: json\n level: info\n", "line 3: did not find expected key"},
		{"tab", "safety:\n  min_ttl: 1h\n\tallow_short_ttl: true\n", "line 3: found a tab character that violates indentation"},
		{"key indented", "log:\n  format: json\n    level: info\n", "line 3: mapping values are not allowed in this context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, tc.body)
			_, err := Load(p, nil)
			require.EqualError(t, err, "config file "+p+": "+tc.want)
		})
	}
}
