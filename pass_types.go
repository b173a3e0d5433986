package reaper

import (
	"iter"
	"time"

	"github.com/lance-reaper/reaper/internal/worker"
)

// Action is what a pass did with one table (Decision.Action): the audit
// ledger's action column and the metrics' label.
type Action string

// Actions of a pass.
const (
	// ActionPurged: the table's files and marker were deleted.
	ActionPurged Action = "purged"
	// ActionSkipped: kept for now (not due, locked, a limit); a later pass
	// looks again.
	ActionSkipped Action = "skipped"
	// ActionDryRun: the table was due and would have been purged.
	ActionDryRun Action = "dry_run"
	// ActionFailed: the table needs an operator, or its purge failed.
	ActionFailed Action = "failed"
	// ActionConflict: a writer won a race (a revive, a write after the
	// drop); nothing was deleted.
	ActionConflict Action = "conflict"
	// ActionHeld: a legal hold kept a due table.
	ActionHeld Action = "held"
	// ActionRefused: a safety rail refused the whole root.
	ActionRefused Action = "refused"
	// ActionCleaned: version retention removed old versions of a live
	// table (RootReport.Retention).
	ActionCleaned Action = "cleaned"
)

// Reason says why a table got its action (Decision.Reason): not_due,
// locked, held, short_ttl, limit, paused, conflict, io, invalid_marker, ...
// docs/OUTCOMES.md lists them all; the ledger and the metrics use the same
// words.
type Reason string

// PassResult is a pass's verdict, the result label of
// reaper_passes_total: success, partial, failed, interrupted or refused.
type PassResult string

// PassReport is the outcome of one pass (PurgeRoots): every root's plan and
// every table's decision. Its methods read the pass itself: call them on a
// report PurgeRoots returned.
type PassReport struct {
	PassID   string
	Started  time.Time
	Finished time.Time
	DryRun   bool
	Roots    []*RootReport
	// Interrupted: the context was cancelled; the tables in flight stopped
	// at their next batch and stay finishable.
	Interrupted bool
	// RootsNotVisited counts roots an interrupted pass did not start.
	RootsNotVisited int
	// DeadlineHit: limits.max_pass_duration ran out.
	DeadlineHit bool
	// RootErrors are discovery problems that did not stop the pass.
	RootErrors []string
	// LedgerErrors are the audit ledger's writes that failed; each makes
	// the pass partial.
	LedgerErrors []error
	// Err stopped the whole pass.
	Err error

	rep *worker.Report
}

// Result says success, refused, partial, failed or interrupted, as
// `reaper purge` reports it (its exit status follows from it).
func (r *PassReport) Result() PassResult { return PassResult(r.rep.Result()) }

// Totals adds up the pass's decisions.
func (r *PassReport) Totals() Totals {
	t := r.rep.Totals()
	return Totals{Purged: t.Purged, Skipped: t.Skipped, Failed: t.Failed, Conflicts: t.Conflicts, Held: t.Held,
		Refused: t.Refused, DryRun: t.DryRun, Objects: t.Objects, Bytes: t.Bytes, RootErrors: t.RootErrors,
		RefusedRoots: t.RefusedRoots, Cleaned: t.Cleaned, RetentionFailed: t.RetentionFailed,
		VersionsRemoved: t.VersionsRemoved, RetentionObjects: t.RetentionObjects, RetentionBytes: t.RetentionBytes}
}

// LedgerFailures counts the audit ledger writes that failed.
func (r *PassReport) LedgerFailures() int { return len(r.LedgerErrors) }

// Totals counts a pass's decisions by action, what they deleted, and its
// roots that failed or were refused.
type Totals struct {
	Purged, Skipped, Failed, Conflicts, Held, Refused, DryRun int
	Objects, Bytes                                            int64
	// RootErrors counts roots that could not be opened or planned.
	RootErrors int
	// RefusedRoots counts roots a safety rail refused.
	RefusedRoots int
	// Version retention (retention.enabled): live tables cleaned (a dry
	// run: that would be) and failed, and the versions, objects and bytes
	// removed. Not counted in the purge's fields above.
	Cleaned, RetentionFailed         int
	VersionsRemoved                  int
	RetentionObjects, RetentionBytes int64
}

// RootReport is one root's part of a pass (PassReport.Roots).
type RootReport struct {
	Root     string
	Started  time.Time
	Finished time.Time
	// Plan counts the root's tables by state when the pass planned it.
	Plan PlanSummary
	// Refused is paused or blast_radius when a rail kept every due table.
	Refused Reason
	// Decisions are the decisions the report keeps whole: errors, problems,
	// short TTLs, conflicts. The routine ones (not due, kept back with the
	// whole root or by a limit: most of a big root's) and the completed
	// purges are kept compactly; All yields every decision, Routine and
	// Done those alone.
	Decisions []Decision
	// Err: the root could not be opened or planned.
	Err error
	// Retention are the root's live tables version retention visited
	// (retention.enabled), by name, after its purges; RetentionNotVisited
	// those a cancelled pass did not start (the next pass covers them).
	Retention           []Retained
	RetentionNotVisited int

	rr *worker.RootReport
}

// Retained is one live table's version retention in a pass: Action is
// cleaned (dry_run), skipped (Reason nothing_to_do, unsupported, paused,
// locked), held, conflict or failed; Objects and Bytes what it deleted.
type Retained struct {
	Decision
	// VersionsRemoved are the versions whose manifests went (a dry run:
	// would go).
	VersionsRemoved int
	// Resumed: the run finished the record of an interrupted run.
	Resumed bool
}

// All yields every decision of the root: Decisions, then the routine ones
// and the completed purges.
func (r *RootReport) All() iter.Seq[Decision] { return decisionsOf(r.rr.All()) }

// Routine yields the routine decisions alone (not due, kept back).
func (r *RootReport) Routine() iter.Seq[Decision] { return decisionsOf(r.rr.Routine()) }

// Done yields the completed purges and dry runs alone.
func (r *RootReport) Done() iter.Seq[Decision] { return decisionsOf(r.rr.Done()) }

// RoutineLen counts the routine decisions.
func (r *RootReport) RoutineLen() int { return r.rr.RoutineLen() }

// After is the root's state once the pass is over: the plan less the
// tables whose data the pass removed.
func (r *RootReport) After() PlanSummary { return planSummaryOf(r.rr.After()) }

// RetentionBacklog is what version retention would still remove in the
// root once the pass is over, versions and bytes: its plans of the live
// tables less what its runs removed (a dry run removes nothing), what
// reaper_retention_reclaimable_* report. ok is false when the pass did not
// plan every live table of the root (retention off there, named tables,
// paused, refused, cut short).
func (r *RootReport) RetentionBacklog() (versions int, bytes int64, ok bool) {
	b, ok := r.rr.RetentionBacklog()
	return b.Versions, b.Bytes, ok
}

// decisionsOf converts the worker's decisions one at a time, as they are
// yielded: a big root's are never all held at once.
func decisionsOf(seq iter.Seq[worker.Decision]) iter.Seq[Decision] {
	return func(yield func(Decision) bool) {
		for d := range seq {
			if !yield(decisionOf(d)) {
				return
			}
		}
	}
}

// PlanSummary counts a root's tables by state.
type PlanSummary struct {
	// Tables counts names with data or a marker.
	Tables        int
	Live          int
	SoftDeleted   int
	Due           int
	Overdue       int // due for more than a day
	OrphanMarker  int
	InvalidMarker int
	Held          int
	// OldestDue is the PurgeAfter of the oldest due table (zero if none).
	OldestDue time.Time
}

// Decision is one table's fate in a pass. Action and Reason are the words
// of the audit ledger and the metrics.
type Decision struct {
	Root   string
	Table  string
	Action Action
	// Reason is the outcome vocabulary's word; Detail says it for people.
	Reason Reason
	Detail string
	// Status is the table as planned (marker times, TTL).
	Status  TableStatus
	Objects int64
	Bytes   int64
	Started time.Time
	// Finished equals Started for decisions that did no work.
	Finished time.Time
	Err      error
	// Lease is how the purge's lease went: "" when none was tried,
	// "acquired", "contended" or "error".
	Lease string
}

func decisionOf(d worker.Decision) Decision {
	return Decision{Root: d.Root, Table: d.Table, Action: Action(d.Action), Reason: Reason(d.Reason), Detail: d.Detail,
		Status: statusOf(d.Status), Objects: d.Objects, Bytes: d.Bytes, Started: d.Started, Finished: d.Finished,
		Err: exported(d.Err), Lease: d.Lease}
}

func planSummaryOf(s worker.PlanSummary) PlanSummary {
	return PlanSummary{Tables: s.Tables, Live: s.Live, SoftDeleted: s.SoftDeleted, Due: s.Due, Overdue: s.Overdue,
		OrphanMarker: s.OrphanMarker, InvalidMarker: s.InvalidMarker, Held: s.Held, OldestDue: s.OldestDue}
}

func passReportOf(r *worker.Report) *PassReport {
	out := &PassReport{PassID: r.PassID, Started: r.Started, Finished: r.Finished, DryRun: r.DryRun,
		Interrupted: r.Interrupted, RootsNotVisited: r.RootsNotVisited, DeadlineHit: r.DeadlineHit,
		RootErrors: r.RootErrors, LedgerErrors: r.LedgerErrors, Err: r.Err, rep: r}
	for _, rr := range r.Roots {
		pr := &RootReport{Root: rr.Root, Started: rr.Started, Finished: rr.Finished, Plan: planSummaryOf(rr.Plan),
			Refused: Reason(rr.Refused), Err: exported(rr.Err), RetentionNotVisited: rr.RetentionNotVisited, rr: rr}
		for _, d := range rr.Decisions {
			pr.Decisions = append(pr.Decisions, decisionOf(d))
		}
		for _, d := range rr.Retention {
			pr.Retention = append(pr.Retention, Retained{Decision: decisionOf(d.Decision), VersionsRemoved: d.Versions, Resumed: d.Resumed})
		}
		out.Roots = append(out.Roots, pr)
	}
	return out
}
