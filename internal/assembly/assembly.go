// Package assembly builds a pass once, for every caller: the CLI's purge
// and run, and the public reaper.PurgeRoots. A pass is the same parts
// whatever it does to a table: one store stack with one pacer, the roots
// of the configuration (discovery, then this replica's shard of them, or
// every root with shard.by table), observers, the audit ledger. New builds
// those parts; a kind of pass turns them into its runner: Parts.Purger
// (purges, then version retention where it is enabled) and Parts.Retainer
// (version retention alone, `reaper retain`).
// Every switch (dry_run, paused, PAUSE, safety.deletions_enabled), rail,
// limit and the ledger reach both the same way.
package assembly

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
	"github.com/lance-reaper/reaper/internal/worker"
)

// tracerName names the spans of every pass.
const tracerName = "github.com/lance-reaper/reaper"

// Options are what a caller decides about a pass; the rest follows from
// Config. Config is required and already validated (ValidateForPass).
type Options struct {
	Config config.Config
	// Stack carries the caller's observability: Transport (the request
	// counter), Metrics, TracerProvider and Logger (slog.Default() when
	// nil). New sets the pacer,
	// the lock keys it exempts and the retry cap from Config.
	Stack stack.Options
	// WrapRoot, when set, wraps each root's bare backend (a test seam that
	// moves the store's clock or injects faults); WrapLedger the audit
	// ledger's. Discovery's stores get neither: a seam meant for a root's
	// tables must not see the listing of its parent.
	WrapRoot   func(objstore.Store) objstore.Store
	WrapLedger func(objstore.Store) objstore.Store
	// Observers receive the pass's events after the metrics observer
	// (added when Stack.Metrics is set).
	Observers []worker.Observer
	// Owner names this process in leases and the ledger
	// (worker.DefaultOwner() when empty); Version and Host go into the
	// ledger's rows.
	Owner   string
	Version string
	Host    string
	// Now is this host's clock for reports and logs (time.Now when nil).
	Now func() time.Time
}

// Parts are the assembled pieces every kind of pass shares.
type Parts struct {
	Config config.Config
	// Open opens one root's store through the pass's stack.
	Open func(ctx context.Context, root roots.Root) (objstore.Store, error)
	// Roots returns the roots of a pass: the configured ones and those
	// discovery finds, then only this replica's shard of them (all of
	// them with shard.by table).
	Roots    func(ctx context.Context) ([]roots.Root, error)
	Observer worker.Observer
	// Ledger is nil when audit.location is not set.
	Ledger  *worker.Ledger
	Logger  *slog.Logger
	Tracer  trace.Tracer
	Now     func() time.Time
	Owner   string
	Version string
}

// New assembles the parts of a pass. Its error names audit.location when
// the ledger's store cannot be opened.
func New(ctx context.Context, o Options) (*Parts, error) {
	cfg := o.Config
	so := o.Stack
	log := so.Logger
	if log == nil {
		log = slog.Default()
	}
	so.Logger = log
	// One pacer for the pass: a throttled root slows the others too; lease
	// traffic never queues behind bulk work.
	so.Pacer = retry.NewPacer(cfg.Limits.RequestsPerSecond)
	so.Unpaced = lifecycle.IsLockKey
	so.RetryMaxElapsed = cfg.Limits.RetryMaxElapsed.D()
	rootOpts, auxOpts := so, so
	rootOpts.WrapBackend = o.WrapRoot
	auxOpts.WrapBackend = noSeam
	p := &Parts{
		Config: cfg,
		Open: func(ctx context.Context, r roots.Root) (objstore.Store, error) {
			return stack.Open(ctx, r.URI, r.StorageOptions, rootOpts)
		},
		Roots: func(ctx context.Context) ([]roots.Root, error) {
			rs, err := roots.Expand(ctx, cfg, func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
				return stack.Open(ctx, uri, opts, auxOpts)
			})
			if cfg.Shard.ByTable() {
				// Every replica visits every root; the worker acts on
				// this replica's share of each root's tables.
				return rs, err
			}
			return roots.Assign(rs, cfg.Shard.Index, cfg.Shard.Count), err
		},
		Observer: observers(so, o.Observers),
		Logger:   log,
		Now:      o.Now,
		Owner:    cmp.Or(o.Owner, worker.DefaultOwner()),
		Version:  o.Version,
	}
	if so.TracerProvider != nil {
		p.Tracer = so.TracerProvider.Tracer(tracerName)
	}
	if loc := cfg.Audit.Location; loc != "" {
		ledgerOpts := auxOpts
		if o.WrapLedger != nil {
			ledgerOpts.WrapBackend = o.WrapLedger
		}
		ls, err := ledger.OpenLocation(ctx, loc, cfg.Audit.StorageOptions, ledgerOpts)
		if err != nil {
			return nil, fmt.Errorf("audit.location %s: %w", loc, err)
		}
		p.Ledger = worker.NewLedger(ls, log, o.Version, o.Host)
	}
	return p, nil
}

// Purger is a purge pass over the parts.
func (p *Parts) Purger() *worker.Worker {
	return &worker.Worker{
		Config:   p.Config,
		Open:     p.Open,
		Roots:    p.Roots,
		Observer: p.Observer,
		Ledger:   p.Ledger,
		Logger:   p.Logger,
		Tracer:   p.Tracer,
		Now:      p.Now,
		Owner:    p.Owner,
		Version:  p.Version,
	}
}

// Retainer is a version-retention pass over the parts: nothing is purged;
// the live tables of every root where retention runs are cleaned. policy,
// when set, replaces every root's retention section (retention on with it
// everywhere); nil keeps each root's own, and roots where it is off are
// left alone.
func (p *Parts) Retainer(policy *retention.Policy) *worker.Worker {
	w := p.Purger()
	w.Kind, w.Policy = worker.RetainOnly, policy
	return w
}

// observers is the metrics observer (when the stack records metrics)
// followed by the caller's.
func observers(so stack.Options, extra []worker.Observer) worker.Observer {
	var obs worker.Observers
	if so.Metrics != nil {
		obs = append(obs, worker.MetricsObserver{M: so.Metrics})
	}
	return append(obs, extra...)
}

// noSeam wraps nothing. Set as a store's WrapBackend, it also keeps a seam
// carried in the context (stack.WithWrapBackend) off that store.
func noSeam(s objstore.Store) objstore.Store { return s }
