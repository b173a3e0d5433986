package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// valid is a config that passes ValidateForPass; each case breaks one rule.
func valid() Config {
	c := Default()
	c.Roots = []Root{{URI: "/var/lib/lancedb"}}
	return c
}

func TestValidate(t *testing.T) {
	t.Parallel()
	s3ok := map[string]string{"aws_region": "eu-west-1"}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		key   string
		value string // substring of the shown value
		fix   string // substring of the fix
	}{
		{"schedule empty", func(c *Config) { c.Schedule = " " }, "schedule", `" "`, "@every 10m"},
		{"schedule bad cron", func(c *Config) { c.Schedule = "every ten minutes" }, "schedule", "every ten", "5-field cron"},
		{"schedule bad every", func(c *Config) { c.Schedule = "@every 10x" }, "schedule", "10x", "@hourly"},
		{"listen no port", func(c *Config) { c.Listen = "localhost" }, "listen", `"localhost"`, ":9090"},
		{"listen bad port", func(c *Config) { c.Listen = ":99999" }, "listen", "99999", "host:port"},
		{"log format", func(c *Config) { c.Log.Format = "logfmt" }, "log.format", "logfmt", `"json" or "text"`},
		{"log level", func(c *Config) { c.Log.Level = "trace" }, "log.level", "trace", `"debug"`},
		{"jitter negative", func(c *Config) { c.Jitter = -1 }, "jitter", "-1ns", "0 turns it off"},
		{"shutdown_grace negative", func(c *Config) { c.ShutdownGrace = -Duration(day) }, "shutdown_grace", "-1d", "30s"},
		{"skew negative", func(c *Config) { c.Defaults.SkewAllowance = -1 }, "defaults.skew_allowance", "-", "5m"},
		{"max_pass_duration negative", func(c *Config) { c.Limits.MaxPassDuration = -1 }, "limits.max_pass_duration", "-", "7d"},
		{"retry negative", func(c *Config) { c.Limits.RetryMaxElapsed = -1 }, "limits.retry_max_elapsed", "-", "30s"},
		{"min_ttl negative", func(c *Config) { c.Safety.MinTTL = -1 }, "safety.min_ttl", "-", "30s"},
		{"ttl zero", func(c *Config) { c.Defaults.TTL = 0 }, "defaults.ttl", "0s", "7d"},
		{"lease_ttl zero", func(c *Config) { c.Defaults.LeaseTTL = 0 }, "defaults.lease_ttl", "0s", "30s"},
		{"lease_ttl below the s3 clock", func(c *Config) {
			c.Defaults.LeaseTTL = Duration(time.Second)
			c.Roots = append(c.Roots, Root{URI: "s3://bkt/db"})
		}, "defaults.lease_ttl", "1s", "at least 2s"},
		{"lease_ttl below the s3 clock, discovered", func(c *Config) {
			c.Defaults.LeaseTTL = Duration(1500 * time.Millisecond)
			c.Discover = []Root{{URI: "s3://bkt/tenants/*/"}}
		}, "defaults.lease_ttl", "1.5s", "at least 2s"},
		{"table_concurrency", func(c *Config) { c.Limits.TableConcurrency = -1 }, "limits.table_concurrency", "-1", "number of tables purged in parallel"},
		{"delete_concurrency", func(c *Config) { c.Limits.DeleteConcurrency = 0 }, "limits.delete_concurrency", "0", "delete requests in flight"},
		{"rps negative", func(c *Config) { c.Limits.RequestsPerSecond = -2 }, "limits.requests_per_second", "-2", "0 for unlimited"},
		{"rps inf", func(c *Config) { c.Limits.RequestsPerSecond = math.Inf(1) }, "limits.requests_per_second", "Inf", "0 for unlimited"},
		{"max tables", func(c *Config) { c.Limits.MaxTablesPerPass = -1 }, "limits.max_tables_per_pass", "-1", "0 for unlimited"},
		{"max objects per table", func(c *Config) { c.Limits.MaxObjectsPerTable = -1 }, "limits.max_objects_per_table", "-1", "0 for unlimited"},
		{"max objects", func(c *Config) { c.Limits.MaxObjectsPerPass = -1 }, "limits.max_objects_per_pass", "-1", "0 for unlimited"},
		{"max table bytes", func(c *Config) { c.Safety.MaxTableBytes = -1 }, "safety.max_table_bytes", "-1", "0 for no cap"},
		{"blast tables", func(c *Config) { c.Safety.BlastRadiusMaxTables = -3 }, "safety.blast_radius_max_tables", "-3", "0 for no cap"},
		{"blast min tables", func(c *Config) { c.Safety.BlastRadiusMinTables = -1 }, "safety.blast_radius_min_tables", "-1", "0 for every root"},
		{"blast percent high", func(c *Config) { c.Safety.BlastRadiusMaxPercent = 101 }, "safety.blast_radius_max_percent", "101", "0 for no cap"},
		{"blast percent low", func(c *Config) { c.Safety.BlastRadiusMaxPercent = -1 }, "safety.blast_radius_max_percent", "-1", "share of a root's tables"},
		{"root relative", func(c *Config) { c.Roots[0].URI = "data/lance" }, "roots[0].uri", "data/lance", "fix the URI"},
		{"root scheme", func(c *Config) { c.Roots[0].URI = "ftp://b/p" }, "roots[0].uri", "ftp://b/p", "fix the URI"},
		{"root star", func(c *Config) { c.Roots[0].URI = "/data/*" }, "roots[0].uri", "/data/*", "discover"},
		{"root duplicate", func(c *Config) { c.Roots = append(c.Roots, Root{URI: "file:///var/lib/lancedb/"}) }, "roots[1].uri", "file:///var/lib/lancedb/", "list each root once"},
		{"file root storage option", func(c *Config) { c.Roots[0].StorageOptions = s3ok }, "roots[0].storage_options", "aws_region", "remove them"},
		{"s3 unknown option", func(c *Config) {
			c.Roots = []Root{{URI: "s3://b/p", StorageOptions: map[string]string{"aws_regoin": "x"}}}
		}, "roots[0].storage_options", "aws_regoin", "accepted options: allow_http"},
		{"s3 half key pair", func(c *Config) {
			c.Roots = []Root{{URI: "s3://b/p", StorageOptions: map[string]string{"aws_access_key_id": "AKIA"}}}
		}, "roots[0].storage_options", "aws_access_key_id", "accepted options"},
		{"discover no star", func(c *Config) { c.Discover = []Root{{URI: "/data/tenants/"}} }, "discover[0].uri", "/data/tenants/", "/*/"},
		{"discover partial star", func(c *Config) { c.Discover = []Root{{URI: "/data/t-*/"}} }, "discover[0].uri", "t-*", "/*/"},
		{"discover inner star", func(c *Config) { c.Discover = []Root{{URI: "s3://b/*/x/*/"}} }, "discover[0].uri", "s3://b/*/x/*/", "/*/"},
		{"discover bad parent", func(c *Config) { c.Discover = []Root{{URI: "ftp://b/*/"}} }, "discover[0].uri", "ftp://b", "/*/"},
		{"discover file option", func(c *Config) { c.Discover = []Root{{URI: "/d/*/", StorageOptions: s3ok}} }, "discover[0].storage_options", "aws_region", "remove them"},
		{"discover s3 option", func(c *Config) {
			c.Discover = []Root{{URI: "s3://b/*/", StorageOptions: map[string]string{"allow_http": "maybe"}}}
		}, "discover[0].storage_options", "allow_http", "accepted options"},
		{"shard count negative", func(c *Config) { c.Shard.Count = -1 }, "shard.count", "-1", "number of replicas"},
		{"shard index too big", func(c *Config) { c.Shard = Shard{Count: 3, Index: 3} }, "shard.index", "3", "distinct index from 0"},
		{"shard index negative", func(c *Config) { c.Shard = Shard{Count: 3, Index: -1} }, "shard.index", "-1", "JOB_COMPLETION_INDEX"},
		{"shard index without count", func(c *Config) { c.Shard = Shard{Index: 2} }, "shard.index", "2", "set shard.count"},
		{"shard by unknown", func(c *Config) { c.Shard = Shard{Count: 3, By: "tables"} }, "shard.by", `"tables"`, `use "root"`},
		{"pushgateway scheme", func(c *Config) { c.Metrics.Pushgateway = "pushgateway:9091" }, "metrics.pushgateway", "pushgateway:9091", "http://pushgateway:9091"},
		{"pushgateway no host", func(c *Config) { c.Metrics.Pushgateway = "http://" }, "metrics.pushgateway", "http://", "http://pushgateway:9091"},
		{"push job empty", func(c *Config) { c.Metrics.PushJob = "" }, "metrics.push_job", `""`, `"reaper"`},
		{"textfile suffix", func(c *Config) { c.Metrics.Textfile = "/var/lib/ne/reaper.txt" }, "metrics.textfile", "reaper.txt", ".prom"},
		{"audit bad uri", func(c *Config) { c.Audit.Location = "audit/" }, "audit.location", "audit/", "one of the accepted forms"},
		{"audit in table (file)", func(c *Config) { c.Audit.Location = "/var/lib/lancedb/t.lance/audit" }, "audit.location", "t.lance", "outside every table"},
		{"audit in table (s3)", func(c *Config) { c.Audit.Location = "s3://b/db/t.lance" }, "audit.location", "t.lance", "outside every table"},
		{"audit file option", func(c *Config) {
			c.Audit = Audit{Location: "/var/audit", StorageOptions: s3ok}
		}, "audit.storage_options", "aws_region", "remove them"},
		{"audit options without location", func(c *Config) { c.Audit.StorageOptions = s3ok }, "audit.storage_options", "aws_region", "set audit.location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "error %v is a *ValidationError", err)
			require.Equal(t, tc.key, ve.Key, "error: %v", err)
			require.Contains(t, ve.Value, tc.value)
			require.Contains(t, ve.Fix, tc.fix)
			require.NotEmpty(t, ve.Problem)
			require.ErrorContains(t, err, "config: "+tc.key+" = ")
			require.ErrorContains(t, err, tc.fix)
			require.Error(t, c.ValidateForPass())
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	t.Parallel()
	c := valid()
	c.Limits.TableConcurrency = -1
	require.EqualError(t, c.Validate(),
		"config: limits.table_concurrency = -1: must be at least 1; set it to the number of tables purged in parallel")
}

func TestValidateJoinsAll(t *testing.T) {
	t.Parallel()
	c := valid()
	c.Limits.TableConcurrency = 0
	c.Log.Level = "loud"
	c.Shard = Shard{Count: 2, Index: 2}
	err := c.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ve *ValidationError
		require.True(t, errors.As(e, &ve))
		keys = append(keys, ve.Key)
	}
	require.ElementsMatch(t, []string{"limits.table_concurrency", "log.level", "shard.index"}, keys)
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*Config){
		"defaults with a root": func(*Config) {},
		"cron spec":            func(c *Config) { c.Schedule = "*/5 * * * *" },
		"descriptor":           func(c *Config) { c.Schedule = "@hourly" },
		"listen off":           func(c *Config) { c.Listen = "" },
		"listen host":          func(c *Config) { c.Listen = "127.0.0.1:0" },
		"text debug":           func(c *Config) { c.Log = Log{Format: "text", Level: "debug"} },
		"discover only":        func(c *Config) { c.Roots = nil; c.Discover = []Root{{URI: "/data/*"}} },
		"discover file uri":    func(c *Config) { c.Discover = []Root{{URI: "file:///data/*/"}} },
		"discover s3": func(c *Config) {
			c.Discover = []Root{{URI: "s3://b/tenants/*/", StorageOptions: map[string]string{"aws_region": "x"}}}
		},
		"discover bucket": func(c *Config) { c.Discover = []Root{{URI: "s3://b/*"}} },
		"s3 root with keys": func(c *Config) {
			c.Roots = []Root{{URI: "s3://b", StorageOptions: map[string]string{"aws_access_key_id": "a", "aws_secret_access_key": "s"}}}
		},
		"shard":          func(c *Config) { c.Shard = Shard{Count: 3, Index: 2} },
		"shard by table": func(c *Config) { c.Shard = Shard{Count: 3, Index: 2, By: ShardByTable} },
		"shard by root":  func(c *Config) { c.Shard.By = ShardByRoot },
		"no cap":         func(c *Config) { c.Safety.BlastRadiusMaxPercent = 0 },
		"full percent":   func(c *Config) { c.Safety.BlastRadiusMaxPercent = 100 },
		"outputs": func(c *Config) {
			c.Metrics.Pushgateway = "https://pg.example:9091"
			c.Metrics.Textfile = "/x/reaper.prom"
		},
		"audit s3": func(c *Config) {
			c.Audit = Audit{Location: "s3://b/audit", StorageOptions: map[string]string{"aws_region": "x"}}
		},
		"audit lance-ish sibling": func(c *Config) { c.Audit.Location = "/var/lib/lancedb/audit.lancedb" },
	} {
		c := valid()
		edit(&c)
		require.NoError(t, c.ValidateForPass(), name)
	}
}

func TestValidateForPassNeedsRoot(t *testing.T) {
	t.Parallel()
	c := Default()
	require.NoError(t, c.Validate())
	err := c.ValidateForPass()
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, "roots", ve.Key)
	require.Contains(t, ve.Fix, "REAPER_ROOTS")
}

func TestValidateHidesSecrets(t *testing.T) {
	t.Parallel()
	c := valid()
	c.Roots = []Root{{URI: "/x", StorageOptions: map[string]string{"aws_secret_access_key": "hunter2"}}}
	c.Metrics.Pushgateway = "ftp://user:hunter2@pg"
	err := c.Validate()
	require.Error(t, err)
	require.False(t, strings.Contains(err.Error(), "hunter2"), "secret in %v", err)
}

// The lease floor is the roots' backends' own: a local disk's clock is
// fine-grained, S3's reads to the second.
func TestLeaseTTLFloorFollowsTheRoots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		uri   string
		lease time.Duration
		ok    bool
	}{
		{"local, sub-second", "/var/lib/lancedb", 400 * time.Millisecond, true},
		{"s3, two ticks", "s3://bkt/db", 2 * time.Second, true},
		{"s3, one tick", "s3://bkt/db", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Roots = []Root{{URI: tc.uri}}
			c.Defaults.LeaseTTL = Duration(tc.lease)
			err := c.ValidateForPass()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "defaults.lease_ttl")
		})
	}
}
