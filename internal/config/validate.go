package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// ValidationError is one invalid setting: the dotted key, its value as
// written (secrets never included), what is wrong and how to fix it.
type ValidationError struct {
	Key     string
	Value   string
	Problem string
	Fix     string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("config: %s = %s: %s; %s", e.Key, e.Value, e.Problem, e.Fix)
}

// validator collects ValidationErrors.
type validator struct{ errs []error }

func (v *validator) add(key string, value any, problem, fix string) {
	v.errs = append(v.errs, &ValidationError{Key: key, Value: show(value), Problem: problem, Fix: fix})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func show(value any) string {
	switch x := value.(type) {
	case string:
		return strconv.Quote(x)
	case Duration:
		if x < 0 {
			return "-" + Duration(-x).String()
		}
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// Validate checks every setting; each problem is a *ValidationError and
// several are joined with errors.Join. It does not require a root: commands
// that need one call ValidateForPass.
func (c Config) Validate() error {
	v := &validator{}
	c.validateTop(v)
	c.validateDurations(v)
	c.validateLimits(v)
	c.validateSafety(v)
	c.validateRoots(v)
	c.validateShard(v)
	c.validateOutputs(v)
	c.validateRetention(v)
	return v.err()
}

// ValidateForPass is Validate plus what a purge pass needs: at least one
// root or discover pattern.
func (c Config) ValidateForPass() error {
	err := c.Validate()
	if len(c.Roots) == 0 && len(c.Discover) == 0 {
		err = errors.Join(err, &ValidationError{Key: "roots", Value: "[]", Problem: "no root and no discover pattern",
			Fix: "pass --root /path/to/lancedb (e.g. --root ./var/demo/db after 'make run'), set REAPER_ROOTS, or list roots or discover patterns in the file"})
	}
	return err
}

func (c Config) validateTop(v *validator) {
	if strings.TrimSpace(c.Schedule) == "" {
		v.add("schedule", c.Schedule, "empty", `set a cron spec such as "*/10 * * * *" or a descriptor such as "@every 10m"`)
	} else if _, err := cron.ParseStandard(c.Schedule); err != nil {
		v.add("schedule", c.Schedule, err.Error(), `use a 5-field cron spec ("0 * * * *") or a descriptor ("@hourly", "@every 10m")`)
	}
	if c.Listen != "" {
		if problem := checkListen(c.Listen); problem != "" {
			v.add("listen", c.Listen, problem, `use host:port such as ":9090" or "127.0.0.1:9090", or "" to turn the HTTP server off`)
		}
	}
	if !slices.Contains([]string{"json", "text"}, c.Log.Format) {
		v.add("log.format", c.Log.Format, "unknown log format", `use "json" or "text"`)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		v.add("log.level", c.Log.Level, "unknown log level", `use "debug", "info", "warn" or "error"`)
	}
}

func checkListen(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "not host:port"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "port must be a number in 0..65535"
	}
	return ""
}

func (c Config) validateDurations(v *validator) {
	for _, d := range []struct {
		key string
		val Duration
	}{
		{"jitter", c.Jitter},
		{"shutdown_grace", c.ShutdownGrace},
		{"defaults.skew_allowance", c.Defaults.SkewAllowance},
		{"limits.max_pass_duration", c.Limits.MaxPassDuration},
		{"limits.retry_max_elapsed", c.Limits.RetryMaxElapsed},
		{"safety.min_ttl", c.Safety.MinTTL},
	} {
		if d.val < 0 {
			v.add(d.key, d.val, "must not be negative", `write a length of time such as "30s", "5m" or "7d" (0 turns it off)`)
		}
	}
	if c.Defaults.TTL <= 0 {
		v.add("defaults.ttl", c.Defaults.TTL, "must be positive", `set how long a dropped table is kept before purge, e.g. "7d"`)
	}
	if c.Defaults.LeaseTTL <= 0 {
		v.add("defaults.lease_ttl", c.Defaults.LeaseTTL, "must be positive", `set the lifecycle lease length, e.g. "30s"`)
	}
}

func (c Config) validateLimits(v *validator) {
	l := c.Limits
	if l.TableConcurrency < 1 {
		v.add("limits.table_concurrency", l.TableConcurrency, "must be at least 1", "set it to the number of tables purged in parallel")
	}
	if l.DeleteConcurrency < 1 {
		v.add("limits.delete_concurrency", l.DeleteConcurrency, "must be at least 1", "set it to the number of delete requests in flight per table")
	}
	if l.MaxDeleteConcurrency < 1 {
		v.add("limits.max_delete_concurrency", l.MaxDeleteConcurrency, "must be at least 1", "set it to the most delete requests in flight per table, or equal to delete_concurrency for a fixed number")
	}
	if l.RequestsPerSecond < 0 || math.IsNaN(l.RequestsPerSecond) || math.IsInf(l.RequestsPerSecond, 0) {
		v.add("limits.requests_per_second", l.RequestsPerSecond, "must be a non-negative number", "set the object-store request rate cap, or 0 for unlimited")
	}
	if l.MaxTablesPerPass < 0 {
		v.add("limits.max_tables_per_pass", l.MaxTablesPerPass, "must not be negative", "set the most tables one pass purges, or 0 for unlimited")
	}
	if l.MaxObjectsPerTable < 0 {
		v.add("limits.max_objects_per_table", l.MaxObjectsPerTable, "must not be negative", "set the most objects one pass deletes from one table, or 0 for unlimited")
	}
	if l.MaxObjectsPerPass < 0 {
		v.add("limits.max_objects_per_pass", l.MaxObjectsPerPass, "must not be negative", "set the most objects one pass deletes, or 0 for unlimited")
	}
}

func (c Config) validateSafety(v *validator) {
	s := c.Safety
	if s.MaxTableBytes < 0 {
		v.add("safety.max_table_bytes", s.MaxTableBytes, "must not be negative", "set the most bytes a table may hold to be purged, or 0 for no cap")
	}
	if s.BlastRadiusMaxTables < 0 {
		v.add("safety.blast_radius_max_tables", s.BlastRadiusMaxTables, "must not be negative", "set the most due tables one root may purge in a pass, or 0 for no cap")
	}
	if s.BlastRadiusMinTables < 0 {
		v.add("safety.blast_radius_min_tables", s.BlastRadiusMinTables, "must not be negative", "set the smallest root (in tables) the percentage cap applies to, or 0 for every root")
	}
	if p := s.BlastRadiusMaxPercent; p < 0 || p > 100 || math.IsNaN(p) {
		v.add("safety.blast_radius_max_percent", p, "must be a percentage in [0, 100]", "set the largest share of a root's tables one pass may purge, or 0 for no cap")
	}
}

func (c Config) validateShard(v *validator) {
	s := c.Shard
	switch {
	case s.Count < 0:
		v.add("shard.count", s.Count, "must not be negative", "set it to the number of replicas, or 0 for no sharding")
	case s.Count <= 1 && s.Index != 0:
		v.add("shard.index", s.Index, "set without sharding (shard.count is 0 or 1)", "set shard.count to the number of replicas, or shard.index to 0")
	case s.Count > 1 && (s.Index < 0 || s.Index >= s.Count):
		v.add("shard.index", s.Index, fmt.Sprintf("must be in [0, %d) for shard.count = %d", s.Count, s.Count),
			"give each replica a distinct index from 0 to shard.count-1 (Kubernetes Indexed Jobs set JOB_COMPLETION_INDEX)")
	}
	if s.By != "" && s.By != ShardByRoot && s.By != ShardByTable {
		v.add("shard.by", s.By, "unknown", `use "root" (each root belongs to one replica) or "table" (the tables of every root are split between the replicas)`)
	}
}

func (c Config) validateOutputs(v *validator) {
	if c.Metrics.PushJob == "" {
		v.add("metrics.push_job", "", "the Pushgateway needs a job label", `leave it unset for "reaper", or name this deployment, e.g. "reaper-tenants"`)
	}
	if p := c.Metrics.Pushgateway; p != "" {
		u, err := url.Parse(p)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("metrics.pushgateway", redactURL(p), "not an http(s) URL", `use e.g. "http://pushgateway:9091", or "" to turn it off`)
		}
	}
	if t := c.Metrics.Textfile; t != "" && !strings.HasSuffix(t, ".prom") {
		v.add("metrics.textfile", t, `the node-exporter textfile collector reads only *.prom files`, `name the file with a ".prom" suffix, or "" to turn it off`)
	}
	if a := c.Audit.Location; a != "" && !refuseCredentials(v, "audit.location", a) {
		loc, err := all.ParseLocation(a)
		switch {
		case err != nil:
			v.add("audit.location", a, err.Error(), "write it in one of the accepted forms, or \"\" to turn the audit ledger off")
		case insideTable(loc):
			v.add("audit.location", a, "inside a table directory (a path segment ends in .lance)",
				"put the ledger outside every table, e.g. next to the database root: purges would delete it")
		default:
			checkStorageOptions(v, "audit.storage_options", loc, c.Audit.StorageOptions)
		}
	} else if len(c.Audit.StorageOptions) > 0 {
		v.add("audit.storage_options", optionKeys(c.Audit.StorageOptions), "set without audit.location", "set audit.location or remove audit.storage_options")
	}
}

func insideTable(loc objstore.Location) bool {
	_, in := lifecycle.TableDirIn(loc.KeyPath())
	return in
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return s
		}
		return u.Redacted()
	}
	return "(unparsable URL)"
}
