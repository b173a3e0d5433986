package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/assembly"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/stack"
	"github.com/lance-reaper/reaper/internal/worker"
)

// passFlags are the flags of the commands that run passes (purge, run).
type passFlags struct {
	ConfigPath    string
	Sets          []string
	AllowShortTTL bool
	Pushgateway   string
	Textfile      string
	// Shard is "I/N": this replica takes the roots hashed to index I of N;
	// "I/N:table" its share of every root's tables (shard.by).
	Shard string
	// flags is the set register filled, to ask pflag which flags were
	// given (nil when the options were built in code).
	flags *pflag.FlagSet
}

// given reports whether the named flag was on the command line, so a flag
// that repeats its default still wins over the config file.
func (f passFlags) given(name string) bool { return f.flags != nil && f.flags.Changed(name) }

func (f *passFlags) register(fs *pflag.FlagSet) {
	f.flags = fs
	if r := fs.Lookup("root"); r != nil {
		// Optional here: the roots may come from --config or REAPER_ROOTS.
		r.Usage = "database root: " + rootUsage() + " (a relative path is made absolute); replaces the roots and discover patterns of --config and REAPER_ROOTS"
	}
	fs.StringVar(&f.ConfigPath, "config", "", "configuration file (see config/reaper.yaml); --root replaces its roots and discover patterns")
	fs.StringArrayVar(&f.Sets, "set", nil, "override one configuration key, e.g. --set limits.table_concurrency=8 (repeatable)")
	fs.BoolVar(&f.AllowShortTTL, "allow-short-ttl", false, fmt.Sprintf("purge markers whose ttl is below safety.min_ttl (default %s)", formatDuration(config.Default().Safety.MinTTL.D())))
	fs.StringVar(&f.Pushgateway, "pushgateway", "", "push the pass's metrics to this Prometheus Pushgateway URL")
	fs.StringVar(&f.Textfile, "textfile", "", "write the pass's metrics to this .prom file for the node-exporter textfile collector")
	fs.StringVar(&f.Shard, "shard", "", "I/N: take shard I of N (0-based; stable hashing): the roots assigned to it, or with I/N:table (shard.by) every root and the tables assigned to it; a Kubernetes Indexed Job sets I through JOB_COMPLETION_INDEX")
}

// runtime is everything a pass needs, wired once: configuration, logger,
// metrics registry, tracer and the worker with its store stack.
type runtime struct {
	cfg      config.Config
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	counter  *metrics.RequestCounter
	worker   *worker.Worker
	// parts are the pass's assembled parts: worker is their purge pass,
	// `reaper retain` makes its retention pass of them.
	parts    *assembly.Parts
	tracerTP trace.TracerProvider
	shutdown func(context.Context) error
	flags    passFlags
}

// loadConfig merges defaults, the file, REAPER_* env and the flags (in
// that order of precedence, flags last) and validates the result.
func loadConfig(so storeOptions, f passFlags) (config.Config, error) {
	cfg, err := config.LoadEnviron(f.ConfigPath, os.Environ())
	if err != nil {
		return cfg, asUsage(err)
	}
	if so.Root != "" {
		root, err := resolveRoot(so.Root)
		if err != nil {
			return cfg, err
		}
		opts, err := parseStorageOptions(so.StorageOptions)
		if err != nil {
			return cfg, err
		}
		cfg.Roots, cfg.Discover = []config.Root{{URI: root, StorageOptions: opts}}, nil
	} else if len(so.StorageOptions) > 0 {
		return cfg, usagef("--storage-option goes with --root; in a config file put storage options under roots[].storage_options")
	}
	// A duration flag is zero unless given (durationValue refuses zero), so
	// a given flag wins over the file even when it repeats the built-in
	// default.
	if so.DefaultTTL != 0 {
		cfg.Defaults.TTL = config.Duration(so.DefaultTTL)
	}
	if so.SkewAllowance != 0 {
		cfg.Defaults.SkewAllowance = config.Duration(so.SkewAllowance)
	}
	for _, kv := range f.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, usagef("--set %q: want KEY=VALUE, e.g. --set limits.table_concurrency=8", kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return cfg, asUsage(err)
		}
	}
	if f.Shard != "" {
		if err := setShard(&cfg, f.Shard); err != nil {
			return cfg, err
		}
	}
	if f.AllowShortTTL || f.given("allow-short-ttl") {
		cfg.Safety.AllowShortTTL = f.AllowShortTTL
	}
	if f.Pushgateway != "" || f.given("pushgateway") {
		cfg.Metrics.Pushgateway = f.Pushgateway
	}
	if f.Textfile != "" || f.given("textfile") {
		cfg.Metrics.Textfile = f.Textfile
	}
	if err := cfg.ApplyJobCompletionIndex(os.LookupEnv); err != nil {
		return cfg, asUsage(err)
	}
	if err := cfg.ValidateForPass(); err != nil {
		return cfg, asUsage(err)
	}
	return cfg, nil
}

// setShard applies --shard: "I/N" sets shard.index and shard.count,
// "I/N:root" or "I/N:table" shard.by too.
func setShard(cfg *config.Config, flag string) error {
	spec, by, hasBy := strings.Cut(flag, ":")
	i, n, ok := strings.Cut(spec, "/")
	if !ok || (hasBy && by != config.ShardByRoot && by != config.ShardByTable) {
		return usagef("--shard %q: want I/N (roots) or I/N:table (the tables of every root), e.g. --shard 0/3", flag)
	}
	if err := cfg.Set("shard.count", n); err != nil {
		return usagef("--shard %q: %w", flag, err)
	}
	if err := cfg.Set("shard.index", i); err != nil {
		return usagef("--shard %q: %w", flag, err)
	}
	if hasBy {
		cfg.Shard.By = by
	}
	return nil
}

// newRuntime loads the configuration and builds the pass with
// assembly.New, as reaper.PurgeRoots does, with the CLI's request counter,
// metrics, tracer and test seams.
func newRuntime(ctx context.Context, so storeOptions, f passFlags) (*runtime, error) {
	cfg, err := loadConfig(so, f)
	if err != nil {
		return nil, err
	}
	// Flags win; otherwise a configured run logs as log.* says (JSON by
	// default) and a plain command line logs text.
	_, envFormat := os.LookupEnv(config.EnvName("log.format"))
	if so.LogFormat == "" && (f.ConfigPath != "" || envFormat) {
		so.LogFormat = cfg.Log.Format
	}
	if so.LogLevel == "" && !so.Quiet {
		// -q is a flag: it wins over log.level as --log-level does.
		so.LogLevel = cfg.Log.Level
	}
	log, err := so.logger()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	perRoot := cfg.Metrics.PerRootLabels == nil || *cfg.Metrics.PerRootLabels
	m := metrics.New(reg, metrics.Options{PerRootLabels: perRoot, Version: version})
	// Libraries that log through slog.Default (the AWS SDK's adapter) join
	// this process's log stream, format and level.
	slog.SetDefault(log)
	// Tracing never stops a pass: unknown OTEL_* values are warned about.
	// OTel reports export errors through its one process-wide handler:
	// route them into the JSON log instead of plain-text lines on stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing export", "error", err) }))
	tp, shutdown := metrics.SetupTracing(ctx, metrics.TracingOptions{ServiceName: "reaper", Version: version, Logger: log})
	rt := &runtime{cfg: cfg, log: log, registry: reg, metrics: m, tracerTP: tp, shutdown: shutdown, flags: f,
		counter: metrics.NewRequestCounter(nil, m)}
	host, _ := os.Hostname()
	parts, err := assembly.New(ctx, assembly.Options{
		Config: cfg,
		Stack: stack.Options{
			Transport:      rt.counter,
			Logger:         log,
			Metrics:        m,
			TracerProvider: tp,
		},
		WrapRoot:   so.wrapStore,
		WrapLedger: so.wrapLedger,
		Version:    version,
		Host:       host,
		Now:        so.Now,
	})
	if err != nil {
		return nil, asUsage(err)
	}
	rt.parts, rt.worker = parts, parts.Purger()
	return rt, nil
}

// export pushes or writes the pass's metrics when configured.
func (rt *runtime) export(ctx context.Context) error {
	if u := rt.cfg.Metrics.Pushgateway; u != "" {
		grouping := map[string]string{}
		if ns := podNamespace(os.LookupEnv, os.ReadFile); ns != "" {
			// The origin's namespace: the alerts group by it, and two
			// namespaces pushing the same job never replace each other.
			grouping["namespace"] = ns
		}
		if sh := rt.cfg.Shard; sh.Count > 1 {
			// Shards push separately; each replaces only its own group.
			grouping["shard"] = strconv.Itoa(sh.Index)
		}
		if err := metrics.Push(ctx, u, rt.cfg.Metrics.PushJob, grouping, rt.registry); err != nil {
			return err // names the URL without its credentials
		}
	}
	if p := rt.cfg.Metrics.Textfile; p != "" {
		if err := metrics.WriteTextfile(p, rt.registry); err != nil {
			return err
		}
	}
	return nil
}

// serviceAccountNamespace is where Kubernetes writes the pod's namespace
// when the service account token is mounted.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is the Kubernetes namespace reaper runs in: POD_NAMESPACE
// (the manifests set it from the downward API), else the mounted service
// account's; "" outside Kubernetes.
func podNamespace(lookup func(string) (string, bool), read func(string) ([]byte, error)) string {
	if v, ok := lookup("POD_NAMESPACE"); ok && v != "" {
		return v
	}
	if b, err := read(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

func (rt *runtime) close() {
	if rt.shutdown != nil {
		_ = rt.shutdown(context.Background())
	}
}
