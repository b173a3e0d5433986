package config

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
)

// Default returns the built-in configuration every file, env variable and
// flag overrides. The lifecycle, lease and retry defaults are read from the
// packages that own those rules; the rest (schedule, limits, safety) are
// config's own and defined only here: the CLI's help reads them from
// Default(). It has no roots: a purge pass needs at least one root or
// discover pattern (ValidateForPass).
func Default() Config {
	return Config{
		Schedule:      "@every 10m",
		Jitter:        0,
		Listen:        ":9090",
		ShutdownGrace: Duration(30 * time.Second),
		Log:           Log{Format: "json", Level: "info"},
		Defaults: Defaults{
			TTL:           Duration(lifecycle.DefaultTTL),
			SkewAllowance: Duration(lifecycle.DefaultSkewAllowance),
			LeaseTTL:      Duration(lifecycle.DefaultLeaseTTL),
		},
		Limits: Limits{
			TableConcurrency:  4,
			DeleteConcurrency: 4,
			// The raw floor's 16 (bench/floor): on a store that does not
			// push back a purge reaches it within a dozen batches.
			MaxDeleteConcurrency: 16,
			RequestsPerSecond:    0, // unlimited
			RetryMaxElapsed:      Duration(retry.DefaultMaxElapsed),
		},
		Safety: Safety{
			MinTTL:        Duration(lifecycle.DefaultMinTTL),
			AllowShortTTL: false,
			// 0 tables = no cap on the count; 50 percent: a pass refuses a
			// root when more than half of its tables are due at once.
			BlastRadiusMaxTables:  0,
			BlastRadiusMaxPercent: 50,
			// The percentage applies to roots of 10 tables or more.
			BlastRadiusMinTables: 10,
			DeletionsEnabled:     boolPtr(true),
			RetentionEnabled:     boolPtr(true),
		},
		Shard:     Shard{By: ShardByRoot},
		Metrics:   Metrics{PerRootLabels: boolPtr(true), PushJob: "reaper"},
		Retention: defaultRetention(),
	}
}

func boolPtr(b bool) *bool { return &b }
