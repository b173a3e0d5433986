// Package config is reaper's configuration: the YAML file (strictly decoded,
// unknown keys rejected), REAPER_* environment variables and command-line
// flags, merged with the precedence flags > env > file > defaults, then
// validated with errors that name the key, the bad value and the fix.
package config

import "time"

// Config is the whole configuration. Every field has a yaml key; the example
// config/reaper.yaml documents every key and a test keeps the two in step.
type Config struct {
	// Schedule is a standard 5-field cron spec or a descriptor such as
	// "@every 10m" or "@hourly" (robfig/cron/v3 syntax).
	Schedule string `yaml:"schedule"`
	// Jitter delays each scheduled pass by a random duration in [0, Jitter).
	Jitter Duration `yaml:"jitter"`
	// Listen is the HTTP address for /metrics, /healthz and /readyz ("" = off).
	Listen string `yaml:"listen"`
	// ShutdownGrace is how long a SIGTERM waits for the table in flight.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// DryRun plans and reports every pass but deletes nothing.
	DryRun bool `yaml:"dry_run"`
	// Paused stops purges on every root (status still works).
	Paused bool `yaml:"paused"`

	Log      Log      `yaml:"log"`
	Defaults Defaults `yaml:"defaults"`
	// Roots are database roots, each with its storage options.
	Roots []Root `yaml:"roots"`
	// Discover patterns are expanded at every pass to each child that is a
	// database root (it holds at least one *.lance/ or *.deleted entry, a
	// namespace catalog __manifest/ or a table in a namespace).
	Discover []Root  `yaml:"discover"`
	Shard    Shard   `yaml:"shard"`
	Limits   Limits  `yaml:"limits"`
	Safety   Safety  `yaml:"safety"`
	Metrics  Metrics `yaml:"metrics"`
	Audit    Audit   `yaml:"audit"`
	// Retention of old versions of live tables, off by default; a root or
	// discover pattern may set its own (RetentionFor).
	Retention Retention `yaml:"retention"`
}

// Log configures log/slog output.
type Log struct {
	Format string `yaml:"format"` // "json" or "text"
	Level  string `yaml:"level"`  // debug, info, warn, error
}

// Defaults of the soft-delete protocol.
type Defaults struct {
	// TTL for markers without ttl_ms (and for reaper drop without --ttl).
	TTL Duration `yaml:"ttl"`
	// SkewAllowance for future-dated markers and the identity fence.
	SkewAllowance Duration `yaml:"skew_allowance"`
	// LeaseTTL is the lifecycle lease length.
	LeaseTTL Duration `yaml:"lease_ttl"`
}

// Root is one database root or discovery pattern, as configured (a pass
// works on roots.Root, which carries what discovery found).
type Root struct {
	// URI is a root URI in one of the forms the backends declare
	// (all.Default().FormList(), listed by `reaper --help`); in Discover,
	// the last path segment may be "*" (s3://bucket/tenants/*/, /data/*/).
	URI string `yaml:"uri"`
	// StorageOptions are the options of the URI's backend, by Lance's
	// names (its descriptor's Options).
	StorageOptions map[string]string `yaml:"storage_options"`
	// Retention replaces the keys of the top-level retention section it
	// sets, for this root (or every root this pattern discovers).
	Retention RetentionOverride `yaml:"retention"`
}

// Shard splits the work of a pass between several replicas by stable
// hashing: whole roots (By root), or the tables of every root (By table).
type Shard struct {
	// Index in [0, Count). Kubernetes Indexed Jobs set JOB_COMPLETION_INDEX,
	// which is used when Index is not set explicitly.
	Index int `yaml:"index"`
	// Count of replicas; 0 or 1 means no sharding.
	Count int `yaml:"count"`
	// By is what is split: ShardByRoot (each root belongs to one replica)
	// or ShardByTable (every replica visits every root and acts on the
	// tables hashed to it). "" reads as ShardByRoot.
	By string `yaml:"by"`

	// indexSet records that Index came from the file, env or a flag, so
	// JOB_COMPLETION_INDEX does not override it.
	indexSet bool
}

// What Shard.By splits.
const (
	ShardByRoot  = "root"
	ShardByTable = "table"
)

// ByTable reports whether the replicas split the tables of each root: By
// is ShardByTable and there is more than one replica.
func (s Shard) ByTable() bool { return s.Count > 1 && s.By == ShardByTable }

// Limits bound a pass.
type Limits struct {
	// TableConcurrency is how many tables are purged in parallel.
	TableConcurrency int `yaml:"table_concurrency"`
	// DeleteConcurrency is how many delete requests are in flight per table
	// at first; MaxDeleteConcurrency is how far that grows while the store
	// does not push back and throughput rises (lifecycle/adaptive.go). A maximum below the start
	// keeps it fixed at the start.
	DeleteConcurrency    int `yaml:"delete_concurrency"`
	MaxDeleteConcurrency int `yaml:"max_delete_concurrency"`
	// RequestsPerSecond caps object-store requests per pass (0 = unlimited).
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// MaxTablesPerPass, MaxObjectsPerPass and MaxPassDuration stop a pass
	// early (0 = unlimited); what is left is picked up by the next pass.
	// Version retention's deletes count toward MaxObjectsPerPass.
	MaxTablesPerPass  int      `yaml:"max_tables_per_pass"`
	MaxObjectsPerPass int64    `yaml:"max_objects_per_pass"`
	MaxPassDuration   Duration `yaml:"max_pass_duration"`
	// MaxObjectsPerTable pauses one table's purge after about this many
	// objects per pass (0 = unlimited); it continues at the next pass, so a
	// huge table cannot starve the others.
	MaxObjectsPerTable int64 `yaml:"max_objects_per_table"`
	// RetryMaxElapsed caps how long one request keeps retrying, counted
	// from its first failure.
	RetryMaxElapsed Duration `yaml:"retry_max_elapsed"`
}

// Safety rails.
type Safety struct {
	// MinTTL is the TTL floor: markers whose ttl is below it are not purged
	// unless AllowShortTTL is set.
	MinTTL        Duration `yaml:"min_ttl"`
	AllowShortTTL bool     `yaml:"allow_short_ttl"`
	// MaxTableBytes skips a table whose purge's walk finds more bytes
	// (0 = no cap): a table that large is purged by a person who meant it.
	MaxTableBytes int64 `yaml:"max_table_bytes"`
	// BlastRadiusMaxTables and BlastRadiusMaxPercent refuse a root when more
	// of its tables are due in one pass (0 = no cap); ConfirmBlastRadius lets
	// an operator confirm one such pass.
	BlastRadiusMaxTables  int     `yaml:"blast_radius_max_tables"`
	BlastRadiusMaxPercent float64 `yaml:"blast_radius_max_percent"`
	// BlastRadiusMinTables: the percentage cap applies only to roots with at
	// least this many tables, so a small root is not refused for dropping
	// two of its three tables.
	BlastRadiusMinTables int  `yaml:"blast_radius_min_tables"`
	ConfirmBlastRadius   bool `yaml:"confirm_blast_radius"`
	// DeletionsEnabled false runs every pass but never deletes anything,
	// neither purges nor version retention (a shadow rollout next to
	// dry_run). RetentionEnabled is its old name, still read: either set
	// false switches deletions off (DeletesEnabled).
	DeletionsEnabled *bool `yaml:"deletions_enabled"`
	RetentionEnabled *bool `yaml:"retention_enabled"`
}

// DeletesEnabled reports whether passes may delete: neither
// safety.deletions_enabled nor its old name safety.retention_enabled is
// false.
func (s Safety) DeletesEnabled() bool {
	return (s.DeletionsEnabled == nil || *s.DeletionsEnabled) && (s.RetentionEnabled == nil || *s.RetentionEnabled)
}

// Metrics export.
type Metrics struct {
	// PerRootLabels adds a root label to per-root series; switch it off for
	// thousands of roots.
	PerRootLabels *bool `yaml:"per_root_labels"`
	// Pushgateway URL for one-shot passes ("" = off).
	Pushgateway string `yaml:"pushgateway"`
	// PushJob is the Pushgateway group's job label. Each push replaces the
	// group job/<push_job> (plus shard/<index> when sharded), so runs of a
	// CronJob replace each other instead of piling up per pod.
	PushJob string `yaml:"push_job"`
	// Textfile path for the node-exporter textfile collector ("" = off).
	Textfile string `yaml:"textfile"`
}

// Audit is the Parquet ledger, one file per pass.
type Audit struct {
	// Location is a URI in a root's form (a local directory, a bucket
	// prefix); "" = off; never inside a table directory.
	Location       string            `yaml:"location"`
	StorageOptions map[string]string `yaml:"storage_options"`
}

// Duration is a time.Duration that YAML and env values write as Go
// durations ("90s", "1h30m") or with a day suffix ("7d", "1d12h").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
