package worker

import (
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
	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
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
	// Resumed: the run finished the record of an interrupted run.
	Resumed bool
}

// retainRoot cleans the root's live tables. paused is readPause's answer:
// a paused root (by its PAUSE switch, or by the configuration, which
// lifecycle's guard cannot see) is cleaned no more than it is purged.
func (p *pass) retainRoot(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, r config.Retention, live []string, paused string, log *slog.Logger) {
	if !r.Enabled || len(live) == 0 {
		return
	}
	slices.Sort(live)
	if paused != "" {
		log.Warn("root paused: no version retention", "why", paused, "tables", len(live))
		for _, name := range live {
			now := p.now()
			p.retained(rr, Retained{Decision: Decision{Table: name, Status: lifecycle.TableStatus{Name: name, State: lifecycle.StateExists},
				Action: outcome.Skipped, Reason: outcome.ReasonPaused, Detail: "version retention: " + paused, Started: now, Finished: now}}, log)
		}
		return
	}
	log = log.With("retention_older_than", r.OlderThan.String())
	// limits.table_concurrency tables at a time, as purges go; each deletes
	// with its own adaptive concurrency.
	sem := make(chan struct{}, max(p.w.Config.Limits.TableConcurrency, 1))
	var wg sync.WaitGroup
	notVisited := 0
	for i, name := range live {
		sem <- struct{}{}
		if p.draining() || ctx.Err() != nil {
			<-sem
			notVisited = len(live) - i
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p.retained(rr, p.retainOne(ctx, ns, rr, name, r, log.With("table", name)), log)
		}()
	}
	wg.Wait()
	p.rep.mu.Lock()
	slices.SortFunc(rr.Retention, func(a, b Retained) int { return strings.Compare(a.Table, b.Table) })
	rr.RetentionNotVisited = notVisited
	p.rep.mu.Unlock()
	if notVisited > 0 {
		log.Warn("retention stopped: live tables not visited; the next pass covers them",
			"tables", notVisited, "reason", stopReason(ctx, outcome.ReasonShutdown))
	}
}

// retained records one table's retention: the report, the ledger, the log.
func (p *pass) retained(rr *RootReport, d Retained, log *slog.Logger) {
	d.Root = rr.Root
	p.rep.mu.Lock()
	rr.Retention = append(rr.Retention, d)
	p.rep.mu.Unlock()
	p.ledger.decision(d.Decision)
	logRetained(log, d)
}

// retainOne cleans (or, in a dry run, plans) one live table.
func (p *pass) retainOne(ctx context.Context, ns *lifecycle.Namespace, rr *RootReport, name string, r config.Retention, log *slog.Logger) Retained {
	root := rr.Root
	ctx, span := p.tracer.Start(ctx, "reaper.retain_table")
	span.SetAttributes(attribute.String("reaper.table", name), attribute.String("reaper.root", root))
	defer span.End()
	d := Retained{Decision: Decision{Table: name, Status: lifecycle.TableStatus{Name: name, State: lifecycle.StateExists}, Started: p.now()}}
	switch {
	case !p.budget.objectsLeft():
		// A dry run says what the pass would do, budget included.
		d.Action, d.Reason = outcome.Skipped, outcome.ReasonLimit
		d.Detail = "version retention: the pass's object budget (limits.max_objects_per_pass) is spent; the next pass cleans it"
	case p.rep.DryRun:
		p.planOne(ctx, ns, &d, r, rr.planNow)
		p.budget.spend(d.Objects)
	default:
		tp := p.newTableProgress(root, name, d.Started, log, "retention progress")
		tp.pr.Retention = true
		deleting := false
		res, err := ns.Retain(ctx, name, lifecycle.RetainOptions{
			Policy: r.Policy(), DeleteConcurrency: p.w.Config.Limits.DeleteConcurrency,
			MaxDeleteConcurrency: p.w.Config.Limits.MaxDeleteConcurrency, Progress: tp.deleted,
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
		d.Objects, d.Bytes, d.Lease, d.Versions, d.Resumed = res.Objects, res.Bytes, res.Lease, res.VersionsRemoved, res.Finished
		d.Err = err
		d.Action, d.Reason, d.Detail = classifyRetain(res, err)
		if d.Reason == outcome.ReasonShutdown {
			d.Reason = stopReason(ctx, d.Reason)
		}
		p.budget.spend(d.Objects)
	}
	d.Finished = p.now()
	span.SetAttributes(attribute.Int64("reaper.objects", d.Objects), attribute.Int64("reaper.bytes", d.Bytes),
		attribute.String("reaper.action", string(d.Action)), attribute.String("reaper.reason", string(d.Reason)))
	if d.Action == outcome.Failed {
		log.Error("retention failed", "reason", d.Reason, "error", d.Err)
	}
	return d
}

// planOne is a dry run's retention of one table: its plan, judged at the
// store's clock of the root's plan (no second listing of the root per
// table), nothing deleted.
func (p *pass) planOne(ctx context.Context, ns *lifecycle.Namespace, d *Retained, r config.Retention, now time.Time) {
	pl, err := ns.PlanTableRetention(ctx, r.Policy(), d.Table, now)
	if err != nil {
		d.Err = err
		d.Action, d.Reason, d.Detail = outcome.Failed, outcome.ReasonIO, "version retention: "+err.Error()
		return
	}
	switch pl.Result {
	case lifecycle.RetentionPlanned:
		d.Versions, d.Objects, d.Bytes = len(pl.Plan.Removed), int64(len(pl.Plan.Files)), pl.Plan.Bytes
		d.Action, d.Reason = outcome.DryRun, outcome.ReasonOldVersions
		d.Detail = fmt.Sprintf("version retention: would remove %d versions, %d files", d.Versions, d.Objects)
	case lifecycle.RetentionNothingToDo:
		d.Action, d.Reason, d.Detail = outcome.Skipped, outcome.ReasonNothingToDo, "version retention: no version old enough to remove"
	case lifecycle.RetentionUnsupported:
		d.Action, d.Reason, d.Detail = outcome.Skipped, outcome.ReasonUnsupported, "version retention: "+pl.Reason
	default:
		d.Err = errors.New(pl.Reason)
		d.Action, d.Reason, d.Detail = outcome.Failed, outcome.ReasonIO, "version retention: "+pl.Reason
	}
}

// classifyRetain maps a retention run's result to an action and reason.
// Every detail starts "version retention:", so its ledger row reads apart
// from a purge's.
func classifyRetain(res lifecycle.RetainResult, err error) (outcome.Action, outcome.Reason, string) {
	const what = "version retention: "
	var rc *objstore.RootChangedError
	switch {
	case err == nil && res.Outcome == lifecycle.RetainCleaned:
		detail := fmt.Sprintf("removed %d versions, %d files", res.VersionsRemoved, res.Objects)
		if res.Finished {
			detail += ", finishing an interrupted run"
		}
		return outcome.Cleaned, outcome.ReasonOldVersions, what + detail
	case err == nil:
		return outcome.Skipped, outcome.ReasonNothingToDo, what + "no version old enough to remove"
	case errors.As(err, &rc):
		return outcome.Failed, outcome.ReasonRootChanged, what + rc.Error()
	case errors.Is(err, lock.ErrLost):
		return outcome.Failed, outcome.ReasonLeaseLost, what + err.Error()
	case errors.Is(err, lance.ErrUnsupported):
		return outcome.Skipped, outcome.ReasonUnsupported, what + err.Error()
	case errors.Is(err, lifecycle.ErrHeld):
		return outcome.Held, outcome.ReasonHeld, what + err.Error()
	case errors.Is(err, lifecycle.ErrPaused):
		return outcome.Skipped, outcome.ReasonPaused, what + err.Error()
	case errors.Is(err, lifecycle.ErrLocked):
		return outcome.Skipped, outcome.ReasonLocked, what + err.Error()
	case errors.Is(err, lifecycle.ErrNotATable):
		return outcome.Failed, outcome.ReasonNotATable, what + err.Error()
	case errors.Is(err, lifecycle.ErrConflict):
		return outcome.Conflict, outcome.ReasonConflict, what + err.Error()
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
	attrs := []any{"table", d.Table, "action", d.Action, "reason", d.Reason, "versions", d.Versions,
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
