package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/roots"
)

// This file owns a pass's version retention (docs/RETENTION.md): on a root
// where retention is enabled (config.RetentionFor), once its purges are
// done, each live table the plan listed is cleaned in turn by
// lifecycle.Retain, under its own lease, beside LanceDB writers; a dry run
// plans it instead. Every table's result is a decision in the outcome
// vocabulary (cleaned, dry_run, skipped, held, failed), written to the audit
// ledger like a purge's, with the audit journal's intent before its first
// delete.

// Retained is one live table's version retention in a pass.
type Retained struct {
	Decision
	// Versions removed (a dry run: that would be removed).
	Versions int
	// Resumed: a retention record of a run cut short was found beside the
	// table; Record says what it named and what of it was still true.
	Resumed bool
	Record  *lifecycle.RecordInfo
	// Left is what the table's plan would still remove once the pass is
	// over: the plan less what its run removed (retain_backlog.go).
	Left Backlog
}

// Kind is what a pass does.
type Kind int

const (
	// PurgeAndRetain purges the due tables of each root, then removes the
	// old versions of its live tables where retention is enabled: the
	// pass of `reaper purge` and `reaper run`.
	PurgeAndRetain Kind = iota
	// RetainOnly removes old versions only, nothing is purged: the pass of
	// `reaper retain`.
	RetainOnly
)

// retentionRule is the version retention of one root's tables: the
// Worker's Policy on every table when set, else the root's retention
// section, whose namespace entries may switch it on or off, or change it,
// for the tables in LanceDB namespaces (config.Retention.ForNamespace).
type retentionRule struct {
	policy *retention.Policy
	cfg    config.Retention
}

// retentionFor is root's retention rule.
func (w *Worker) retentionFor(root roots.Root) retentionRule {
	return retentionRule{policy: w.Policy, cfg: w.Config.RetentionFor(root.Retention)}
}

// anyOn reports whether retention runs on some table of the root.
func (r retentionRule) anyOn() bool { return r.policy != nil || r.cfg.AnyEnabled() }

// forTable is table name's policy and whether retention runs on it.
func (r retentionRule) forTable(name string) (retention.Policy, bool) {
	if r.policy != nil {
		return *r.policy, true
	}
	var namespace []string
	if lifecycle.IsNamespaced(name) {
		namespace, _ = lifecycle.SplitObjectID(lifecycle.ObjectID(name))
	}
	c := r.cfg.ForNamespace(namespace)
	return c.Policy(), c.Enabled
}

// retentionFloor is the floor policies are checked against:
// safety.min_ttl, none with safety.allow_short_ttl.
func (w *Worker) retentionFloor() time.Duration {
	if w.Config.Safety.AllowShortTTL {
		return 0
	}
	return w.Config.Safety.MinTTL.D()
}

// retainRoot cleans the root's live tables, each with its policy. paused
// is readPause's answer: a paused root (by its PAUSE switch, or by the
// configuration, which lifecycle's guard cannot see) is cleaned no more
// than it is purged. A policy below safety.min_ttl at the root's clock
// cleans nothing of the tables it is theirs (short_ttl).
func (p *pass) retainRoot(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, live []liveTable, paused string, log *slog.Logger) {
	// live is every live table of the root; this replica cleans its share
	// of them (share.go).
	mine := ownsLive(rr.share, live)
	if mine == 0 {
		rr.retentionPlanned = true // none of its own: nothing left to remove
		return
	}
	slices.SortFunc(live, func(a, b liveTable) int { return strings.Compare(a.name, b.name) })
	hold := func(live []liveTable, reason outcome.Reason, detail string) {
		for _, t := range live {
			if !rr.share.Owns(t.name) {
				continue
			}
			now := p.now()
			p.retained(rr, Retained{Decision: Decision{Table: t.name, Status: lifecycle.TableStatus{Name: t.name, State: lifecycle.StateExists},
				Action: outcome.Skipped, Reason: reason, Detail: "version retention: " + detail, Started: now, Finished: now}}, log)
		}
	}
	if paused != "" {
		log.Warn("root paused: no version retention", "why", paused, "tables", mine)
		hold(live, outcome.ReasonPaused, paused)
		return
	}
	live = p.aboveFloor(rr, live, hold, log)
	if len(live) == 0 {
		return
	}
	if all := live[0].policy; !slices.ContainsFunc(live, func(t liveTable) bool { return t.policy != all }) {
		log = log.With("retention_cutoff", all.Cutoff(rr.planNow).UTC().Format(time.RFC3339))
		if all.Cutoff(rr.planNow).After(rr.planNow) {
			log.Warn("version retention: the cutoff is in the future by the store's clock: no version is kept for its age", "now", rr.planNow.UTC().Format(time.RFC3339))
		}
	}
	// Every live table is planned first: a shallow clone's reads of
	// another table are known only once every table was read
	// (lifecycle/retain_clones.go). Then each runs (a dry run: reports),
	// its plan protected. limits.table_concurrency tables at a time in
	// both, as purges go; each deletes with its own adaptive concurrency.
	plans, planErrs, visited := p.planLive(ctx, ns, rr, live)
	if visited == len(live) {
		p.w.memos.keepOnly(rr.Root, live)
		rr.retentionPlanned = true
	}
	var protected map[string]*lifecycle.Protected
	unread := ""
	if !p.retainNamed() {
		protected = ns.ProtectedBy(plans[:visited])
		unread = unreadTables(plans[:visited])
	}
	ran := p.tablesAtOnce(ctx, visited, func(i int) {
		t := live[i]
		if !rr.share.Owns(t.name) {
			plans[i] = lifecycle.RetentionPlan{} // read for its clones; another replica's to run
			return
		}
		p.retained(rr, p.retainOne(ctx, ns, rr, t, &plans[i], planErrs[i], protected, unread, tableLog(log, t, live, rr.planNow)), log)
	})
	notVisited := ownsLive(rr.share, live[ran:])
	p.rep.mu.Lock()
	slices.SortFunc(rr.Retention, func(a, b Retained) int { return strings.Compare(a.Table, b.Table) })
	rr.RetentionNotVisited = notVisited
	p.rep.mu.Unlock()
	if notVisited > 0 {
		log.Warn("retention stopped: live tables not visited; the next pass covers them",
			"tables", notVisited, "reason", stopReason(ctx, outcome.ReasonShutdown))
	}
}

// aboveFloor returns the live tables whose policy is not below
// safety.min_ttl at the root's clock; the others are decided short_ttl,
// nothing of them read or deleted.
func (p *pass) aboveFloor(rr *RootReport, live []liveTable, hold func([]liveTable, outcome.Reason, string), log *slog.Logger) []liveTable {
	var ok, short []liveTable
	var floorErr error
	for _, t := range live {
		if err := t.policy.CheckFloor(rr.planNow, p.w.retentionFloor()); err != nil {
			short, floorErr = append(short, t), err
			continue
		}
		ok = append(ok, t)
	}
	if len(short) > 0 {
		log.Error("version retention refused: the policy is below safety.min_ttl", "error", floorErr, "tables", ownsLive(rr.share, short))
		hold(short, outcome.ReasonShortTTL, floorErr.Error()+"; nothing was deleted: pass --allow-short-ttl (safety.allow_short_ttl) to plan it anyway")
	}
	return ok
}

// tableLog is log for one live table's retention: its name as LanceDB
// knows it, and its cutoff when the root's tables do not share one.
func tableLog(log *slog.Logger, t liveTable, live []liveTable, now time.Time) *slog.Logger {
	log = log.With("table", lifecycle.DisplayName(t.name))
	if slices.ContainsFunc(live, func(o liveTable) bool { return o.policy != t.policy }) {
		log = log.With("retention_cutoff", t.policy.Cutoff(now).UTC().Format(time.RFC3339))
	}
	return log
}

// unreadTables names the tables whose plans failed (a read error): what
// they read through base paths, were they shallow clones, is unknown.
func unreadTables(plans []lifecycle.RetentionPlan) string {
	var names []string
	for _, pl := range plans {
		if pl.Result == lifecycle.RetentionFailed {
			names = append(names, pl.Name)
		}
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
	}
	return strings.Join(names, ", ")
}

// retainNamed reports whether the pass names its tables: its plans then
// do not cover the root, and each run reads the root's other tables for
// their clones itself.
func (p *pass) retainNamed() bool { return len(p.w.Tables) > 0 }

// keptVersions bounds the versions a root's plans keep their tables for
// until they run (BENCHMARKS.md: reading a table of 10,000 versions peaked
// at 190 MB): a plan with something to do keeps its table while the
// root's total stays under it, and its run narrows it with a listing of
// _versions/; past it, a plan keeps its lists alone and its run reads the
// table again.
const keptVersions = 10_000

// defaultKeptFiles bounds the files a root's plans keep listed until they
// run (about 150 bytes each; Worker.KeptFiles): a first pass over
// thousands of busy tables would otherwise hold every table's list at
// once. Past it a plan is shed and its table planned again when it runs.
const defaultKeptFiles = 1_000_000

// planLive plans the live tables, limits.table_concurrency at a time,
// each from the pass's listing of the root at its clock; a plan with
// nothing to do keeps no table, one with something to do keeps it within
// keptVersions. It returns the plans (and errors) by live's index and how
// many tables it planned before a shutdown.
func (p *pass) planLive(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, live []liveTable) ([]lifecycle.RetentionPlan, []error, int) {
	plans := make([]lifecycle.RetentionPlan, len(live))
	errs := make([]error, len(live))
	var mu sync.Mutex
	kept, files := 0, 0
	visited := p.tablesAtOnce(ctx, len(live), func(i int) {
		t := live[i]
		plans[i], errs[i] = ns.PlanTableRetention(ctx, t.policy, t.name, lifecycle.TablePlanOptions{Now: rr.planNow, Record: t.record,
			Memo: p.w.memos.get(rr.Root, t.name)})
		p.w.memos.put(rr.Root, t.name, plans[i].Memo)
		mu.Lock()
		keep := plans[i].Result == lifecycle.RetentionPlanned && kept+plans[i].Versions <= keptVersions && !p.rep.DryRun
		if keep {
			kept += plans[i].Versions
		}
		shed := plans[i].Result == lifecycle.RetentionPlanned && files+len(plans[i].Plan.Files) > cmp.Or(p.w.KeptFiles, defaultKeptFiles)
		if !shed {
			files += len(plans[i].Plan.Files)
		}
		mu.Unlock()
		if !keep {
			plans[i].Forget()
		}
		if shed {
			plans[i].Shed()
		}
	})
	return plans, errs, visited
}

// tablesAtOnce runs fn for the indexes 0..n-1 in order,
// limits.table_concurrency at a time, until the pass drains or ctx ends,
// and waits for those it started. It returns how many it started: n
// unless it stopped early.
func (p *pass) tablesAtOnce(ctx context.Context, n int, fn func(i int)) int {
	sem := make(chan struct{}, max(p.w.Config.Limits.TableConcurrency, 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n {
		sem <- struct{}{}
		if p.draining() || ctx.Err() != nil {
			<-sem
			return i
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	return n
}

// decideUnretainable reports the named tables of a retention pass that are
// not live: a soft-deleted table is left to its purge, an unknown name is
// not found.
func (p *pass) decideUnretainable(rr *RootReport, names []lifecycle.TableStatus, log *slog.Logger) {
	for _, s := range names {
		now := p.now()
		reason := outcome.ReasonSoftDeleted
		switch {
		case s.State == lifecycle.StateNotFound:
			reason = outcome.ReasonNotFound
		case s.State == lifecycle.StateNotATable:
			reason = outcome.ReasonNotATable
		case s.Marker == nil && s.Commit == nil:
			reason = outcome.ReasonIO
		}
		p.retained(rr, Retained{Decision: Decision{Table: s.Name, Status: s, Action: outcome.Failed, Reason: reason,
			Detail: "version retention: " + lifecycle.NotRetainable(s), Started: now, Finished: now}}, log)
	}
}

// retained records one table's retention: the report, the ledger, the log.
// A table a pass only looked at (nothing to do) is no ledger row: at
// thousands of idle tables a pass, such rows would bury the ones that
// matter.
func (p *pass) retained(rr *RootReport, d Retained, log *slog.Logger) {
	d.Root = rr.Root
	p.rep.mu.Lock()
	rr.Retention = append(rr.Retention, d)
	p.rep.mu.Unlock()
	if !(d.Action == outcome.Skipped && d.Reason == outcome.ReasonNothingToDo) {
		p.ledger.decision(d.Decision)
	}
	logRetained(log, d)
}

// retainOne runs one live table's plan (a dry run: reports it), protected
// for the root's other tables. A table the plan finds nothing to do in
// costs its reading: no lease is taken.
func (p *pass) retainOne(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, lt liveTable, pl *lifecycle.RetentionPlan, planErr error,
	protected map[string]*lifecycle.Protected, unread string, log *slog.Logger) (d Retained) {
	root, name := rr.Root, lt.name
	ctx, span := p.tracer.Start(ctx, "reaper.retain_table")
	span.SetAttributes(attribute.String("reaper.table", lifecycle.DisplayName(name)), attribute.String("reaper.root", root))
	defer span.End()
	d = Retained{Decision: Decision{Table: name, Status: lifecycle.TableStatus{Name: name, State: lifecycle.StateExists, RetainRecord: lt.record}, Started: p.now()}}
	var planned Backlog
	defer func() {
		d.Finished = p.now()
		d.Left = planned
		if !p.rep.DryRun {
			d.Left = planned.less(d.Versions, d.Bytes)
		}
		span.SetAttributes(attribute.Int64("reaper.objects", d.Objects), attribute.Int64("reaper.bytes", d.Bytes),
			attribute.String("reaper.action", string(d.Action)), attribute.String("reaper.reason", string(d.Reason)))
		if d.Action == outcome.Failed {
			log.Error("retention failed", "reason", d.Reason, "error", d.Err)
		}
	}()
	if planErr == nil && pl.Shedded {
		// Shed to bound the root's plans in memory: the same planner, at
		// the same clock, now.
		*pl, planErr = ns.PlanTableRetention(ctx, lt.policy, name, lifecycle.TablePlanOptions{Now: rr.planNow, Record: lt.record})
	}
	if planErr == nil {
		pl.Protect(protected[name])
	}
	planned = backlogOf(*pl, planErr)
	if !p.budget.objectsLeft() {
		// A dry run says what the pass would do, budget included.
		d.Action, d.Reason = outcome.Skipped, outcome.ReasonLimit
		d.Detail = "version retention: the pass's object budget (limits.max_objects_per_pass) is spent; the next pass cleans it"
		return d
	}
	if planErr == nil {
		if p.w.OnRetentionPlan != nil {
			shown := *pl
			shown.Forget()
			p.w.OnRetentionPlan(root, shown)
		}
	}
	if done := p.judgePlan(ctx, &d, *pl, planErr, lt.policy.DeleteUnverified); done {
		return d
	}
	if unread != "" && d.Action == outcome.DryRun {
		// A table of the root could not be read: were it a shallow clone
		// of this one, its reads would be unknown. Nothing deleted until a
		// pass reads it.
		d.Action, d.Reason = outcome.Skipped, outcome.ReasonIO
		d.Detail = "version retention: " + unread + " could not be read: a shallow clone among them may read this table's files; nothing is deleted until a pass reads them"
		d.Versions, d.Objects, d.Bytes = 0, 0, 0
		return d
	}
	if p.rep.DryRun {
		p.budget.spend(d.Objects)
		return d
	}
	p.runPlan(ctx, ns, rr, &d, pl, protected, lt.policy, log)
	pl.Forget() // done with: the others' runs may keep theirs
	p.budget.spend(d.Objects)
	return d
}

// judgePlan decides a table by its plan when there is nothing to run (it
// failed, is unsupported, or has nothing to do, no record to drop and, with
// pruneIdle false, no empty directory to look for) and returns true;
// otherwise it fills in what a dry run would remove.
func (p *pass) judgePlan(ctx context.Context, d *Retained, pl lifecycle.RetentionPlan, err error, pruneIdle bool) bool {
	const what = "version retention: "
	d.Record, d.Resumed = pl.Record, pl.Record != nil
	switch {
	case err != nil:
		d.Err = err
		d.Action, d.Reason, d.Detail = outcome.Failed, outcome.ReasonIO, what+err.Error()
		return true
	case pl.Result == lifecycle.RetentionUnsupported:
		d.Action, d.Reason, d.Detail = outcome.Skipped, outcome.ReasonUnsupported, what+pl.Reason
		return true
	case pl.Result == lifecycle.RetentionFailed:
		d.Err = errors.New(pl.Reason)
		d.Action, d.Reason, d.Detail = classifyRetain(lifecycle.RetainResult{}, pl.Err())
		if d.Reason == outcome.ReasonShutdown {
			d.Reason = stopReason(ctx, d.Reason)
		}
		return true
	case pl.Result == lifecycle.RetentionNothingToDo && pl.Record == nil:
		d.Action, d.Reason, d.Detail = outcome.Skipped, outcome.ReasonNothingToDo, what+"no version old enough to remove"
		if pl.Unchanged {
			d.Detail += " (unchanged since the last pass: not read again)"
		}
		// With delete_unverified a run also removes the empty index
		// directories a local disk may hold: it runs (under its lease).
		return !pruneIdle
	}
	d.Versions, d.Objects, d.Bytes = len(pl.Plan.Removed), int64(len(pl.Plan.Files)), pl.Plan.Bytes
	d.Action, d.Reason = outcome.DryRun, outcome.ReasonOldVersions
	d.Detail = fmt.Sprintf(what+"would remove %d versions, %d files", d.Versions, d.Objects)
	if pl.Result == lifecycle.RetentionNothingToDo {
		d.Reason, d.Detail = outcome.ReasonNothingToDo, what+"no version old enough to remove; would drop the record an interrupted run left"
	}
	if r := pl.Record; r != nil {
		d.Detail += fmt.Sprintf("; a record left by an interrupted run (%s, %d versions, %d files): %d of its files still true, the rest dropped",
			r.Owner, r.Versions, r.Files, r.StillTrue)
	}
	d.Detail += keptForOthers(pl)
	return false
}

// keptForOthers says what a plan keeps for the root's shallow clones.
func keptForOthers(pl lifecycle.RetentionPlan) string {
	if pl.KeptForOthers == 0 {
		return ""
	}
	return fmt.Sprintf("; kept %d files %s reads through a base path (a shallow clone)", pl.KeptForOthers, pl.KeptFor)
}

// runPlan executes a table's plan under its lease and records what it did.
func (p *pass) runPlan(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, d *Retained, pl *lifecycle.RetentionPlan,
	protected map[string]*lifecycle.Protected, policy retention.Policy, log *slog.Logger) {
	root, name := rr.Root, d.Table
	tp := p.newTableProgress(root, name, d.Started, log, "retention progress")
	tp.pr.Retention = true
	deleting := false
	res, err := ns.Retain(ctx, name, lifecycle.RetainOptions{
		Policy: policy, Plan: pl, MinTTL: p.w.retentionFloor(),
		// A pass over the whole root read every table: what its clones
		// read of this one is known; a pass of named tables leaves the run
		// to read the others.
		Protected: protected[name], ProtectedRead: !p.retainNamed(),
		DeleteConcurrency: p.w.Config.Limits.DeleteConcurrency, MaxDeleteConcurrency: p.w.Config.Limits.MaxDeleteConcurrency,
		Progress: tp.deleted,
		// No destruction without an audit record, as for a purge.
		BeforeDelete: func(ctx context.Context, versions int, objects, bytes int64) error {
			if err := p.ledger.intent(ctx, root, d.Status, d.Started, objects, bytes); err != nil {
				return err
			}
			deleting = true
			tp.total(objects, bytes)
			return nil
		},
	})
	if deleting {
		// Only tables that deleted: most tables of most passes have
		// nothing to do, and a display of them would be noise.
		tp.done(res.Objects, res.Bytes)
	}
	d.Objects, d.Bytes, d.Lease, d.Versions = res.Objects, res.Bytes, res.Lease, res.VersionsRemoved
	d.Resumed, d.Record = res.Finished, res.Record
	d.Err = err
	d.Action, d.Reason, d.Detail = classifyRetain(res, err)
	if len(res.Warnings) > 0 {
		d.Detail += "; " + strings.Join(res.Warnings, "; ")
	}
	if err == nil {
		d.Detail += keptForOthers(*pl)
	}
	if d.Reason == outcome.ReasonShutdown {
		d.Reason = stopReason(ctx, d.Reason)
	}
}

// classifyRetain maps a retention run's result to an action and reason.
// Every detail starts "version retention:", so its ledger row reads apart
// from a purge's.
func classifyRetain(res lifecycle.RetainResult, err error) (outcome.Action, outcome.Reason, string) {
	const what = "version retention: "
	switch {
	case err == nil && res.Outcome == lifecycle.RetainCleaned:
		detail := fmt.Sprintf("removed %d versions, %d files", res.VersionsRemoved, res.Objects)
		if r := res.Record; r != nil {
			detail += fmt.Sprintf("; took over the record of an interrupted run: %d of its %d files still true", r.StillTrue, r.Files)
		}
		return outcome.Cleaned, outcome.ReasonOldVersions, what + detail
	case err == nil && res.Record != nil:
		return outcome.Skipped, outcome.ReasonNothingToDo, what + "no version old enough to remove; dropped the record an interrupted run left (nothing of it still true)"
	case err == nil:
		return outcome.Skipped, outcome.ReasonNothingToDo, what + "no version old enough to remove"
	}
	if a, r, detail, ok := tableErrorOutcome("version retention", err); ok {
		return a, r, what + detail
	}
	switch {
	case errors.Is(err, lifecycle.ErrAlreadyDeleted), errors.Is(err, lifecycle.ErrNotFound):
		// Dropped or removed since the plan listed it: a purge's, or
		// nobody's, business now.
		return outcome.Skipped, outcome.ReasonNothingToDo, what + err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcome.Skipped, outcome.ReasonShutdown, what + "stopped: " + err.Error() + "; the next pass finishes it"
	}
	return outcome.Failed, outcome.ReasonIO, what + err.Error()
}

// logRetained writes the one line of a table's retention: debug when there
// was nothing to do (most tables of most passes), error when it failed.
func logRetained(log *slog.Logger, d Retained) {
	attrs := []any{"table", lifecycle.DisplayName(d.Table), "action", d.Action, "reason", d.Reason, "versions", d.Versions,
		"objects", d.Objects, "bytes", d.Bytes}
	switch d.Action {
	case outcome.Failed:
		log.Error("table retention", append(attrs, "detail", d.Detail)...)
	case outcome.Skipped:
		if d.Reason == outcome.ReasonNothingToDo {
			log.Debug("table retention", attrs...)
			return
		}
		log.Warn("table retention", append(attrs, "detail", d.Detail)...)
	default:
		log.Info("table retention", attrs...)
	}
}
