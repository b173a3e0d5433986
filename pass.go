package reaper

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/assembly"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/logctx"
	"github.com/lance-reaper/reaper/internal/worker"
)

// Root is one database root of a pass: a URI as Open takes it and the
// storage options of its store.
type Root struct {
	URI            string
	StorageOptions map[string]string
}

// PassOptions configure PurgeRoots. Only Roots is required.
type PassOptions struct {
	// Roots are the database roots to purge, in this order.
	Roots []Root
	// Tables, when set, limits the pass to these names on every root; a
	// named table that is live or unknown is reported as failed.
	Tables []string
	// DryRun plans and reports but deletes nothing and takes no lease.
	DryRun bool
	// Settings are configuration keys as in config/reaper.yaml (the same
	// names `reaper purge --set` takes), e.g. "limits.table_concurrency":
	// "8", "safety.min_ttl": "1h", "defaults.lease_ttl": "2m". Every safety
	// rail of the CLI applies with its default unless set here.
	Settings map[string]string
	// OnDecision, when set, is called with every table's decision as it is
	// made (from several goroutines when limits.table_concurrency > 1): the
	// progress signal of a pass.
	OnDecision func(Decision)
	// Owner names this process in leases and the ledger (host/pid when
	// empty).
	Owner string
	// Logger for structured logs (slog.Default() when nil).
	Logger *slog.Logger
	// Registerer receives the store metrics of every root of the pass, as
	// Options.Registerer does for Open; nil records none.
	Registerer prometheus.Registerer
	// TracerProvider traces the pass, its roots, tables and store calls;
	// nil traces none.
	TracerProvider trace.TracerProvider
}

// PurgeRoots runs one purge pass over many roots, with every safety rail
// of `reaper purge` (blast radius, minimum TTL, PAUSE, holds, budgets):
// what a service calls for an on-demand purge. Cancel ctx to stop it: the
// tables in flight stop at their next batch and stay finishable, and the
// report says interrupted. The error is for bad options or a pass that
// could not start; per-root and per-table failures are in the report.
func PurgeRoots(ctx context.Context, opts PassOptions) (*PassReport, error) {
	cfg, err := passConfig(opts)
	if err != nil {
		return nil, err
	}
	// Lines about one table carry it and the pass id, from the context
	// they are logged with.
	opts.Logger = logctx.Logger(opts.Logger)
	so := storeStack(opts.Registerer, opts.TracerProvider, opts.Logger, cfg.Limits.RetryMaxElapsed.D())
	var obs []worker.Observer
	if opts.OnDecision != nil {
		obs = append(obs, decisionObserver{f: opts.OnDecision})
	}
	parts, err := assembly.New(ctx, assembly.Options{
		Config:    cfg,
		Stack:     so,
		Observers: obs,
		Owner:     opts.Owner,
		Version:   moduleVersion(),
		Host:      hostname(),
	})
	if err != nil {
		return nil, fmt.Errorf("purge roots: %w", err)
	}
	w := parts.Purger()
	w.Tables = opts.Tables
	rep, err := w.Pass(ctx, nil)
	if rep == nil {
		return nil, exported(err)
	}
	return passReportOf(rep), exported(err)
}

// passConfig is the CLI's configuration for the same pass: built-in
// defaults, then the roots, then Settings, validated as `reaper purge`
// validates its own.
func passConfig(opts PassOptions) (config.Config, error) {
	cfg := config.Default()
	if len(opts.Roots) == 0 {
		return cfg, fmt.Errorf("purge roots: no roots given: set PassOptions.Roots")
	}
	for _, r := range opts.Roots {
		cfg.Roots = append(cfg.Roots, config.Root{URI: r.URI, StorageOptions: r.StorageOptions})
	}
	cfg.DryRun = opts.DryRun
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in a stable order
	for _, k := range keys {
		if err := cfg.Set(k, opts.Settings[k]); err != nil {
			return cfg, fmt.Errorf("purge roots: PassOptions.Settings: %w", err)
		}
	}
	for _, name := range opts.Tables {
		if err := lifecycle.ValidateName(name); err != nil {
			return cfg, fmt.Errorf("purge roots: PassOptions.Tables: %w", err)
		}
	}
	if err := cfg.ValidateForPass(); err != nil {
		return cfg, fmt.Errorf("purge roots: %w", err)
	}
	return cfg, nil
}

// decisionObserver hands every decision to a callback and ignores the
// other events of a pass.
type decisionObserver struct {
	worker.NopObserver
	f func(Decision)
}

func (o decisionObserver) Decision(_ *worker.Report, d worker.Decision) { o.f(decisionOf(d)) }

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// moduleVersion is reaper's module version in the caller's build, for the
// ledger's version column ("embedded" when the build does not say).
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/lance-reaper/reaper" && d.Version != "" {
				return d.Version
			}
		}
	}
	return "embedded"
}
