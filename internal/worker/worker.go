// Package worker runs purge passes: every configured root (discovered and
// sharded by the caller), each planned once, the safety rails applied, the
// due tables purged oldest first with bounded concurrency, and every
// decision handed to an Observer (metrics, the audit ledger, logs). The CLI's
// one-shot purge and the daemon's scheduled passes are the same code.
package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/logctx"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/roots"
)

// PauseKey is the per-root pause switch: while <root>/_reaper/PAUSE exists
// (a file, or a folder holding anything), passes purge nothing on that root
// (status still works). Each purge also re-reads it before every batch.
const PauseKey = lifecycle.PauseKey

// Worker runs passes. Config, Open and Roots are required.
type Worker struct {
	Config config.Config
	// Open opens one root's store with the wrappers the caller composes
	// (metrics, retries, tracing).
	Open func(ctx context.Context, root roots.Root) (objstore.Store, error)
	// Roots returns the roots of this pass (expanded, and this replica's
	// shard of them; every root with shard.by table, where the pass takes
	// this replica's share of each root's tables: share.go).
	Roots func(ctx context.Context) ([]roots.Root, error)
	// Observer receives the pass's events; nil ignores them.
	Observer Observer
	// Ledger, when set, records every pass in the audit ledger; its
	// failures fail the pass (Report.LedgerErrors).
	Ledger *Ledger
	Logger *slog.Logger
	Tracer trace.Tracer
	// Now is this host's wall clock for reports and logs; it decides
	// nothing (the store's clock does).
	Now func() time.Time
	// LeaseClock is the clock lease holders measure their leases with
	// (durations only); nil uses CLOCK_BOOTTIME. Tests move it to freeze a
	// pass.
	LeaseClock func() time.Time
	// DeleteBatch is lifecycle.Options.DeleteBatch (0: the stores' limit);
	// tests lower it to purge small tables in several batches.
	DeleteBatch int
	// KeptFiles bounds the files the retention plans of a root keep listed
	// until they run (0: a million); tests lower it to shed plans.
	KeptFiles int
	// Owner names this process in leases and the ledger.
	Owner string
	// Version of reaper, for the ledger.
	Version string
	// ProgressEvery is how often a long purge logs its progress (default 10s).
	ProgressEvery time.Duration
	// OnProgress, when set, receives every table's progress: once walked,
	// after each delete batch and when done (from the purging goroutines).
	OnProgress func(Progress)
	// Tables, when set, limits the pass to these names; a named table that
	// is live or unknown is reported as failed (in a RetainOnly pass, one
	// that is not live).
	Tables []string
	// Kind is what the pass does: PurgeAndRetain (the zero value) or
	// RetainOnly.
	Kind Kind
	// Policy, when set, is the version retention policy of every root,
	// replacing their retention sections (retention is on everywhere):
	// `reaper retain --older-than`.
	Policy *retention.Policy
	// memos are what this Worker's passes remember of idle tables for
	// the next (retain_memo.go).
	memos memos
	// OnRetentionPlan, when set, receives each live table's retention plan
	// as it is made, before it runs (a dry run: instead), from the
	// retaining goroutines: a dry run's report lists its files.
	OnRetentionPlan func(root string, pl lifecycle.RetentionPlan)
}

// Pass runs one pass. draining reports whether shutdown has begun: no new
// table starts then, and the tables in flight finish. The error is for the
// pass as a whole (no roots could be had); per-root and per-table failures
// are in the report.
func (w *Worker) Pass(ctx context.Context, draining func() bool) (*Report, error) {
	now := w.Now
	if now == nil {
		now = time.Now
	}
	log := cmp.Or(w.Logger, slog.Default())
	tracer := w.Tracer
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("reaper")
	}
	if draining == nil {
		draining = func() bool { return false }
	}
	rep := &Report{PassID: newPassID(now()), Started: now(), DryRun: w.dryRun()}
	log = log.With("pass_id", rep.PassID)
	// Lines logged below with the pass's context (leases, retries) name
	// the pass too.
	ctx = logctx.With(ctx, "pass_id", rep.PassID)
	ctx, span := tracer.Start(ctx, "reaper.pass", trace.WithAttributes(
		attribute.String("reaper.pass_id", rep.PassID), attribute.Bool("reaper.dry_run", rep.DryRun)))
	defer span.End()
	if d := w.Config.Limits.MaxPassDuration.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errPassDeadline)
		defer cancel()
	}
	obs := w.observer()
	obs.PassStarted(rep)
	lp := w.Ledger.begin(rep, w.journalOptions(now))
	rs, err := w.Roots(ctx)
	// Folded once the roots are known, before anything is purged: a dead
	// pass's table gone from its root is then recorded purged.
	lp.recover(ctx, w.tableGone(rs, now, log))
	if err != nil && len(rs) == 0 {
		rep.Finished = now()
		rep.Err = fmt.Errorf("list roots: %w", err)
		lp.finish()
		obs.PassFinished(rep)
		endPassSpan(span, rep)
		return rep, rep.Err
	}
	if err != nil {
		// Some discovery patterns failed; the others still run.
		log.Error("root discovery incomplete", "error", err)
		rep.RootErrors = append(rep.RootErrors, err.Error())
	}
	started := []any{"roots", len(rs), "dry_run", rep.DryRun}
	if sh := w.Config.Shard; sh.Count > 1 {
		started = append(started, "shard", fmt.Sprintf("%d/%d by %s", sh.Index, sh.Count, cmp.Or(sh.By, config.ShardByRoot)))
	}
	log.Info("pass started", started...)
	budget := newBudget(w.Config.Limits)
	p := &pass{w: w, rep: rep, log: log, tracer: tracer, now: now, obs: obs, ledger: lp, budget: budget, draining: draining}
	for i, root := range rs {
		if draining() {
			rep.Interrupted = true
			rep.RootsNotVisited = len(rs) - i
			log.Warn("shutdown: roots not visited; the next pass covers them", "roots", rep.RootsNotVisited)
			break
		}
		rr := p.root(ctx, root)
		rep.Roots = append(rep.Roots, rr)
	}
	if errors.Is(context.Cause(ctx), errPassDeadline) {
		rep.DeadlineHit = true
	}
	if ctx.Err() != nil && !rep.DeadlineHit {
		rep.Interrupted = true
	}
	rep.Finished = now()
	// The file is written before the pass's result is: its failure is
	// part of it.
	lp.finish()
	obs.PassFinished(rep)
	endPassSpan(span, rep)
	t := rep.Totals()
	log.Info("pass finished", "result", rep.Result(), "purged", t.Purged, "objects", t.Objects, "bytes", t.Bytes,
		"skipped", t.Skipped+t.Held+t.Conflicts+t.Refused, "failed", t.Failed,
		"duration_seconds", rep.Finished.Sub(rep.Started).Seconds())
	return rep, nil
}

var errPassDeadline = errors.New("limits.max_pass_duration reached")

// dryRun is true when the pass must not delete: dry_run, or deletions
// switched off for a shadow rollout (safety.deletions_enabled, or its old
// name safety.retention_enabled).
func (w *Worker) dryRun() bool {
	return w.Config.DryRun || !w.Config.Safety.DeletesEnabled()
}

// namespace is the lifecycle over one root's store, as every pass opens it.
func (w *Worker) namespace(store objstore.Store, now func() time.Time, log *slog.Logger) (*lifecycle.Namespace, error) {
	cfg := w.Config
	return lifecycle.New(store, lifecycle.Options{
		DefaultTTL: cfg.Defaults.TTL.D(), SkewAllowance: cfg.Defaults.SkewAllowance.D(),
		LeaseTTL: cfg.Defaults.LeaseTTL.D(), Owner: w.Owner, Now: now, LeaseClock: w.LeaseClock,
		DeleteBatch: w.DeleteBatch, Logger: log, // lifecycle adds the root
	})
}

// journalOptions are the lease terms of the pass's audit journal (those of
// the table leases) and now, the clock its rows are dated by.
func (w *Worker) journalOptions(now func() time.Time) ledger.JournalOptions {
	return ledger.JournalOptions{Owner: w.Owner, TTL: w.Config.Defaults.LeaseTTL.D(),
		Skew: w.Config.Defaults.SkewAllowance.D(), Clock: w.LeaseClock, Now: now}
}

func (w *Worker) observer() Observer {
	if w.Observer == nil {
		return NopObserver{}
	}
	return w.Observer
}

// pass is the state of one running pass.
type pass struct {
	w        *Worker
	rep      *Report
	log      *slog.Logger
	tracer   trace.Tracer
	now      func() time.Time
	obs      Observer
	ledger   *ledgerPass
	budget   *budget
	draining func() bool
}

// root plans and purges one root.
func (p *pass) root(ctx context.Context, root roots.Root) *RootReport {
	cfg := p.w.Config
	rr := &RootReport{Root: root.URI, Started: p.now(), share: p.w.shareOf(root.URI)}
	log := p.log.With("root", root.URI)
	ctx = logctx.With(ctx, "root", root.URI)
	ctx, span := p.tracer.Start(ctx, "reaper.root", trace.WithAttributes(attribute.String("reaper.root", root.URI)))
	defer span.End()
	defer func() {
		p.rep.mu.Lock()
		sortBriefs(&rr.briefs)
		rr.settle()
		p.rep.mu.Unlock()
		rr.Finished = p.now()
		p.ledger.rootFinished(rr)
		p.obs.RootFinished(p.rep, rr)
		endRootSpan(span, rr)
	}()

	store, err := p.w.Open(ctx, root)
	if err != nil {
		rr.Err = fmt.Errorf("open root %s: %w", root.URI, err)
		log.Error("root skipped", "error", rr.Err)
		return rr
	}
	ns, err := p.w.namespace(store, p.now, p.log)
	if err != nil {
		rr.Err = err
		return rr
	}
	paused := readPause(ctx, p, ns)
	rr.defaultTTL = ns.Options().DefaultTTL
	plan, err := p.planRoot(ctx, ns, root)
	if err != nil {
		rr.Err = fmt.Errorf("plan %s: %w", root.URI, err)
		log.Error("root skipped", "error", rr.Err)
		return rr
	}
	now := plan.now
	rr.Plan = plan.summary
	rr.due, rr.planNow = plan.due, now
	p.obs.RootPlanned(p.rep, rr, plan.plan(), now)
	plan.keepShare(rr.share)
	policy, _ := p.w.retentionFor(root)
	if p.w.Kind == RetainOnly {
		p.decideUnretainable(rr, plan.unretainable, log)
		p.retainRoot(ctx, ns, rr, policy, plan.live, paused, log)
		return rr
	}
	p.decidePlanned(rr, plan)
	rc := &railContext{ctx: ctx, p: p, ns: ns, rr: rr, log: log, safety: cfg.Safety, paused: paused}
	due := applyRootRails(rc, plan.due)
	if rr.Refused != "" {
		// Every due table is decided: a mass drop's statuses go now.
		rr.due, plan.due = nil, nil
		if rr.Refused == outcome.ReasonPaused {
			// Its live tables are reported paused; a root the blast radius
			// refused is not cleaned either, until an operator looks.
			p.retainRoot(ctx, ns, rr, policy, plan.live, paused, log)
		}
		return rr
	}
	p.purgeAll(ctx, ns, rr, due, log)
	p.retainRoot(ctx, ns, rr, policy, plan.live, paused, log)
	if !p.rep.DryRun && ctx.Err() == nil && len(plan.leaseOnly) > 0 {
		// Leases of processes killed after finishing their table, as the
		// plan's listing saw them: no second listing of the root.
		if _, err := ns.SweepStaleLeases(ctx, plan.leaseOnly); err != nil {
			log.Warn("sweep stale leases", "error", err)
		}
	}
	return rr
}

// decidePlanned records the decision of every name the plan keeps from
// purging: unpurgeable (named, no marker), held, invalid, busy, not due.
func (p *pass) decidePlanned(rr *RootReport, plan *rootPlan) {
	for _, s := range plan.unpurgeable {
		if s.State == lifecycle.StateExists {
			p.decide(rr, Decision{Table: s.Name, Action: outcome.Failed, Reason: outcome.ReasonLive, Status: s,
				Detail: fmt.Sprintf("table is live (no marker %s): drop it first with 'reaper drop'", lifecycle.MarkerKey(s.Name))})
		} else {
			p.decide(rr, Decision{Table: s.Name, Action: outcome.Failed, Reason: outcome.ReasonNotFound, Status: s,
				Detail: "table not found: no data and no marker"})
		}
	}
	for _, s := range plan.held {
		p.decide(rr, Decision{Table: s.Name, Action: outcome.Held, Reason: outcome.ReasonHeld, Detail: "legal hold: " + s.Hold.Reason, Status: s})
	}
	for _, s := range plan.invalid {
		reason := outcome.ReasonInvalidMarker
		switch {
		case s.State == lifecycle.StateUnreadable:
			reason = outcome.ReasonIO
		case s.State == lifecycle.StateNotATable:
			reason = outcome.ReasonNotATable
		case s.State == lifecycle.StateStuck:
			reason = outcome.ReasonStuck
		case s.FutureDated:
			reason = outcome.ReasonFutureMarker
		}
		p.decide(rr, Decision{Table: s.Name, Action: outcome.Failed, Reason: reason, Detail: s.Problem, Status: s})
	}
	for _, s := range plan.busy {
		p.decide(rr, Decision{Table: s.Name, Action: outcome.Skipped, Reason: outcome.ReasonLocked, Detail: "lease held by " + s.Lease.Owner, Status: s})
	}
	p.decideNotDue(rr, plan)
}

// decideNotDue records the not-due decisions by name: the observers
// receive each whole, the report keeps the plan's briefs (brief.go) and,
// whole, the few a brief cannot carry.
func (p *pass) decideNotDue(rr *RootReport, plan *rootPlan) {
	p.rep.mu.Lock()
	kind, compact := rr.kindIndex(notDueKind)
	p.rep.mu.Unlock()
	full := plan.notDueFull
	for i := range plan.notDue.len() {
		b := plan.notDue.at(i)
		for len(full) > 0 && full[0].Name < b.name {
			p.decide(rr, notDueDecision(full[0]))
			full = full[1:]
		}
		d := notDueDecision(b.status(rr.defaultTTL))
		if !compact {
			p.decide(rr, d) // a root of 256 kinds already: kept whole
			continue
		}
		d.Root, d.Started = rr.Root, p.now()
		d.Finished = d.Started
		b.kind, b.atNano = kind, d.Started.UnixNano()
		p.ledger.decision(d)
		p.obs.Decision(p.rep, d)
		logDecision(p.log, d)
	}
	for _, s := range full {
		p.decide(rr, notDueDecision(s))
	}
	if compact {
		p.rep.mu.Lock()
		rr.briefs.concat(&plan.notDue)
		p.rep.mu.Unlock()
	}
	plan.notDue = briefList{}
}

// purgeAll purges the due tables, oldest first, with bounded concurrency.
func (p *pass) purgeAll(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, due *dueList, log *slog.Logger) {
	conc := max(1, p.w.Config.Limits.TableConcurrency)
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for s := range due.all {
		// Wait for a slot first, so the start rails (draining above all)
		// judge the table when it would really start.
		sem <- struct{}{}
		t := &ticket{status: s}
		if d, held := applyStartRails(ctx, p, t); held {
			<-sem
			p.decide(rr, d)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d := p.purgeOne(ctx, ns, rr.Root, s, t.maxObjects, log.With("table", s.Name))
			p.budget.spend(d.Objects)
			p.decide(rr, d)
		}()
	}
	wg.Wait()
}

// purgeOne purges one table of root and turns the outcome into a decision.
func (p *pass) purgeOne(ctx context.Context, ns *lifecycle.Namespace, root string, s lifecycle.TableStatus, maxObjects int64, log *slog.Logger) Decision {
	ctx, span := p.tracer.Start(ctx, "reaper.purge_table", trace.WithAttributes(
		attribute.String("reaper.table", s.Name), attribute.String("reaper.root", ns.Store().URI()),
		attribute.Int64("reaper.deleted_at_ms", s.DeletedAt.UnixMilli()), attribute.Int64("reaper.ttl_ms", s.TTL.Milliseconds())))
	defer span.End()
	d := Decision{Table: s.Name, Status: s, Started: p.now()}
	tp := p.newTableProgress(ns.Store().URI(), s.Name, d.Started, log, "purge progress")
	res, err := ns.Purge(ctx, s.Name, lifecycle.PurgeOptions{
		DryRun: p.rep.DryRun, DeleteConcurrency: p.w.Config.Limits.DeleteConcurrency,
		MaxDeleteConcurrency: p.w.Config.Limits.MaxDeleteConcurrency,
		MaxObjects:           maxObjects, Progress: tp.deleted, Planned: &s, Walked: tp.total,
		AfterWalk: applyWalkRails(p, s),
		// No destruction without an audit record: the journal holds the
		// intent before the purge commits.
		BeforeCommit: func(ctx context.Context, objects, bytes int64) error {
			return p.ledger.intent(ctx, root, s, d.Started, objects, bytes)
		},
	})
	d.Finished = p.now()
	tp.done(res.Objects, res.Bytes)
	d.Objects, d.Bytes, d.Lease = res.Objects, res.Bytes, res.Lease
	span.SetAttributes(attribute.Int64("reaper.objects", res.Objects), attribute.Int64("reaper.bytes", res.Bytes))
	d.Action, d.Reason, d.Detail = classify(res, err)
	if held := (*heldAfterWalk)(nil); errors.As(err, &held) {
		// Nothing was deleted; the walk's count is what was judged.
		d.Action, d.Reason, d.Detail, d.Objects, d.Bytes = outcome.Skipped, held.reason, held.why, 0, 0
		err = nil
	}
	if p.rep.DryRun && d.Action != outcome.DryRun {
		// A dry run that stopped (a conflict, a hold) had counted what it
		// walked; nothing was deleted, and the ledger and metrics must not
		// say otherwise.
		d.Objects, d.Bytes = 0, 0
	}
	if d.Reason == outcome.ReasonInterrupted {
		d.Reason = stopReason(ctx, d.Reason)
	}
	d.Err = err
	endTableSpan(span, d)
	if d.Action == outcome.Failed {
		log.Error("purge failed", "reason", d.Reason, "error", err)
	}
	return d
}

// decide records one decision.
func (p *pass) decide(rr *RootReport, d Decision) {
	d.Root = rr.Root
	if d.Started.IsZero() {
		d.Started = p.now()
		d.Finished = d.Started
	}
	p.rep.mu.Lock()
	if b, ok := rr.routineBrief(d); ok {
		rr.briefs.add(b)
	} else if db, ok := rr.doneBriefOf(d); ok {
		rr.done.add(db)
	} else {
		rr.Decisions = append(rr.Decisions, d)
	}
	p.rep.mu.Unlock()
	p.ledger.decision(d)
	p.obs.Decision(p.rep, d)
	logDecision(p.log, d)
}

// logDecision writes the one decision line of a table: at info, except a
// table not due yet (the common case of every pass), which is at debug.
// Failed tables are at error (their purge's own line says more).
func logDecision(log *slog.Logger, d Decision) {
	level := slog.LevelInfo
	switch {
	case d.Action == outcome.Failed:
		level = slog.LevelError
	case d.Reason == outcome.ReasonNotDue:
		level = slog.LevelDebug
	}
	if !log.Enabled(context.Background(), level) {
		return // the line's attributes cost a big root's pass most of its garbage
	}
	attrs := []any{"root", d.Root, "table", d.Table, "action", d.Action, "reason", d.Reason}
	if d.Detail != "" {
		attrs = append(attrs, "detail", d.Detail)
	}
	if d.Objects > 0 {
		attrs = append(attrs, "objects", d.Objects, "bytes", d.Bytes)
	}
	if !d.Finished.Equal(d.Started) {
		attrs = append(attrs, "duration_seconds", d.Finished.Sub(d.Started).Seconds())
	}
	log.Log(context.Background(), level, "table decision", attrs...)
}

func newPassID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// DefaultOwner names this process in leases: host/pid.
func DefaultOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", cmp.Or(host, "unknown-host"), os.Getpid())
}
