package worker

import (
	"iter"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// Report is the outcome of one pass.
type Report struct {
	PassID      string
	Started     time.Time
	Finished    time.Time
	DryRun      bool
	Roots       []*RootReport
	Interrupted bool
	// RootsNotVisited counts roots a draining pass did not start.
	RootsNotVisited int
	DeadlineHit     bool
	// RootErrors are discovery problems that did not stop the pass.
	RootErrors []string
	// LedgerErrors are the audit ledger's writes that failed: a journal
	// record, the pass's file, folding an earlier pass's journal. Each is
	// an audit record lost or late, and fails the pass (Result partial).
	LedgerErrors []error
	Err          error

	mu sync.Mutex
}

// RootReport is one root's part of a pass.
type RootReport struct {
	Root     string
	Started  time.Time
	Finished time.Time
	Plan     PlanSummary
	Refused  outcome.Reason // ReasonPaused or ReasonBlastRadius when nothing was purged
	// Decisions are the root's decisions but its routine ones (brief.go:
	// not due, or kept back with the whole root or by the pass's limits,
	// most of a big root's) and its completed purges and dry runs, which
	// the report keeps compactly (due.go). All yields every decision,
	// Routine and Done those alone.
	Decisions []Decision
	Err       error
	// Retention are the root's live tables cleaned (or planned, in a dry
	// run) by version retention, by name (retain.go); RetentionNotVisited
	// those a shutdown or the pass's deadline left for the next pass.
	Retention           []Retained
	RetentionNotVisited int
	// retainOn: version retention runs on the whole root (enabled there,
	// the pass names no tables); retentionPlanned: the pass planned every
	// live table it owns there (retain_backlog.go).
	retainOn, retentionPlanned bool

	// briefs are the routine decisions (by name once the root is done),
	// kinds what they say, defaultTTL the TTL of markers that carry none.
	briefs     briefList
	kinds      []briefKind
	defaultTTL time.Duration
	// done are the purges and dry runs that completed (due.go).
	done chunks[doneBrief]
	// due is the plan's due list and planNow the store's time it was
	// judged at, for After; planNow is zero when the root was not planned.
	due     *dueList
	planNow time.Time
	// after is After, kept once the root is done and its due list dropped.
	after *PlanSummary
	// share is which of the root's tables this replica acts on and reports
	// (share.go): every table unless the replicas split tables.
	share roots.Share
}

// All yields every decision of the root: Decisions, then the routine ones
// by name (Routine), then the completed purges (Done).
func (rr *RootReport) All() iter.Seq[Decision] {
	return func(yield func(Decision) bool) {
		for _, d := range rr.Decisions {
			if !yield(d) {
				return
			}
		}
		for d := range rr.Routine() {
			if !yield(d) {
				return
			}
		}
		for d := range rr.Done() {
			if !yield(d) {
				return
			}
		}
	}
}

// Done yields the root's completed purges and dry runs without an error,
// in the order they finished, each as the observers received it but for
// its Status's MarkerModified and MarkerETag. A purge that finished a
// committed table is in Decisions.
func (rr *RootReport) Done() iter.Seq[Decision] {
	return func(yield func(Decision) bool) {
		for i := range rr.done.len() {
			if !yield(rr.doneDecision(rr.done.at(i))) {
				return
			}
		}
	}
}

// Routine yields the root's routine decisions by table name: tables not
// due yet, and due tables kept back with the whole root (paused,
// blast_radius) or by the pass's limits (limit, shutdown, deadline). Each
// is the decision the observers received but for its Status's
// MarkerModified and MarkerETag, which the report does not keep.
func (rr *RootReport) Routine() iter.Seq[Decision] {
	return func(yield func(Decision) bool) {
		for i := range rr.briefs.len() {
			if !yield(rr.decisionOf(rr.briefs.at(i))) {
				return
			}
		}
	}
}

// RoutineLen is how many decisions Routine yields.
func (rr *RootReport) RoutineLen() int { return rr.briefs.len() }

// PlanSummary counts a root's tables by state at planning time.
type PlanSummary struct {
	Tables        int // names with data or a marker
	Live          int
	SoftDeleted   int
	Due           int
	Overdue       int // due for more than OverdueAfter
	OrphanMarker  int
	InvalidMarker int
	Held          int
	// OldestDue is the purge_after of the oldest due table (zero if none).
	OldestDue time.Time
}

// OverdueAfter: a table still not purged this long after it became due is
// overdue (a backlog signal for alerts).
const OverdueAfter = 24 * time.Hour

// count adds one name of the plan: a table with data or a marker.
func (s *PlanSummary) count(st lifecycle.TableStatus) {
	s.Tables++
	switch st.State {
	case lifecycle.StateExists:
		s.Live++
	case lifecycle.StateOrphanMarker:
		s.OrphanMarker++
	case lifecycle.StateInvalidMarker, lifecycle.StateUnreadable:
		// Both need an operator and are never purged.
		s.InvalidMarker++
	default:
		s.SoftDeleted++
	}
}

// countDue sets the due counts from the plan's due tables, judged at now.
func (s *PlanSummary) countDue(due *dueList, now time.Time) {
	s.Due = due.len()
	for st := range due.all {
		if s.OldestDue.IsZero() || st.PurgeAfter.Before(s.OldestDue) {
			s.OldestDue = st.PurgeAfter
		}
		if now.Sub(st.PurgeAfter) > OverdueAfter {
			s.Overdue++
		}
	}
}

// After is the root's state once the pass is over: the plan less the tables
// whose data the pass removed. The backlog metrics report it, so a pass that
// clears the backlog clears its alerts too. A dry run removes nothing.
func (rr *RootReport) After() PlanSummary {
	if rr.after != nil {
		return *rr.after
	}
	s := rr.Plan
	gone := map[string]bool{}
	for d := range rr.purged() {
		gone[d] = true
	}
	if len(gone) == 0 {
		return s // the due list may be gone: a refused root drops it
	}
	s.OldestDue = time.Time{}
	for st := range rr.due.all {
		if !gone[st.Name] {
			if s.OldestDue.IsZero() || st.PurgeAfter.Before(s.OldestDue) {
				s.OldestDue = st.PurgeAfter
			}
			continue
		}
		s.Tables--
		s.Due--
		if st.State == lifecycle.StateOrphanMarker {
			s.OrphanMarker--
		} else {
			s.SoftDeleted--
		}
		if rr.planNow.Sub(st.PurgeAfter) > OverdueAfter {
			s.Overdue--
		}
	}
	return s
}

// settle keeps After and drops the due list: the report outlives the pass
// (a CLI writes it, a caller reads it), the statuses it needs no more.
func (rr *RootReport) settle() {
	a := rr.After()
	rr.after, rr.due = &a, nil
}

// purged yields the tables the pass purged.
func (rr *RootReport) purged() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, d := range rr.Decisions {
			if d.Action == outcome.Purged && !yield(d.Table) {
				return
			}
		}
		for i := range rr.done.len() {
			db := rr.done.at(i)
			if rr.kinds[db.b.kind].action == outcome.Purged && !yield(db.b.name) {
				return
			}
		}
	}
}

// Totals adds up a pass.
type Totals struct {
	Purged, Skipped, Failed, Conflicts, Held, Refused, DryRun int
	Objects, Bytes                                            int64
	RootErrors                                                int
	// RefusedRoots counts roots a rail refused (RootReport.Refused).
	RefusedRoots int
	// Version retention: tables cleaned (a dry run: that would be) and
	// failed, and the versions, objects and bytes removed.
	Cleaned, RetentionFailed         int
	VersionsRemoved                  int
	RetentionObjects, RetentionBytes int64
}

// Totals counts the decisions of every root.
func (r *Report) Totals() Totals {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t Totals
	for _, rr := range r.Roots {
		t.addRoot(rr)
	}
	return t
}

// rootTotals counts the decisions of one root of the pass.
func (r *Report) rootTotals(rr *RootReport) Totals {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t Totals
	t.addRoot(rr)
	return t
}

// addRoot counts the decisions of rr; the report's lock is held.
func (t *Totals) addRoot(rr *RootReport) {
	if rr.Err != nil {
		t.RootErrors++
	}
	if rr.Refused != "" {
		t.RefusedRoots++
	}
	for i := range rr.briefs.len() {
		t.count(rr.kinds[rr.briefs.at(i).kind].action)
	}
	for i := range rr.done.len() {
		db := rr.done.at(i)
		t.count(rr.kinds[db.b.kind].action)
		t.Objects += db.objects
		t.Bytes += db.bytes
	}
	for _, d := range rr.Decisions {
		t.Objects += d.Objects
		t.Bytes += d.Bytes
		t.count(d.Action)
	}
	for _, d := range rr.Retention {
		t.countRetained(d)
	}
}

// ledgerFailed records a failed audit ledger write.
func (r *Report) ledgerFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.LedgerErrors = append(r.LedgerErrors, err)
}

// LedgerFailures counts the failed audit ledger writes so far.
func (r *Report) LedgerFailures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.LedgerErrors)
}

// count adds one decision's action.
func (t *Totals) count(a outcome.Action) {
	switch a {
	case outcome.Purged:
		t.Purged++
	case outcome.DryRun:
		t.DryRun++
	case outcome.Failed:
		t.Failed++
	case outcome.Conflict:
		t.Conflicts++
	case outcome.Held:
		t.Held++
	case outcome.Refused:
		t.Refused++
	default:
		t.Skipped++
	}
}

// countRetained adds one table's version retention.
func (t *Totals) countRetained(d Retained) {
	switch d.Action {
	case outcome.Cleaned, outcome.DryRun:
		t.Cleaned++
		t.VersionsRemoved += d.Versions
		t.RetentionObjects += d.Objects
		t.RetentionBytes += d.Bytes
	case outcome.Failed:
		t.RetentionFailed++
	}
}

// Result is the pass's verdict, reaper_passes_total's result label. A
// failed audit ledger write makes an otherwise successful or refused pass
// partial: what it destroyed may be missing from the audit trail.
func (r *Report) Result() outcome.Result {
	t := r.Totals()
	switch {
	case r.Err != nil || (len(r.Roots) > 0 && t.RootErrors == len(r.Roots)):
		return outcome.ResultFailed
	case r.Interrupted:
		return outcome.ResultInterrupted
	case t.Failed > 0 || t.RetentionFailed > 0 || t.RootErrors > 0 || len(r.RootErrors) > 0 || r.LedgerFailures() > 0:
		return outcome.ResultPartial
	case t.RefusedRoots > 0:
		return outcome.ResultRefused
	}
	return outcome.ResultSuccess
}
