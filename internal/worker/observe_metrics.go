package worker

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// MetricsObserver turns a pass's events into reaper_* metrics. Reasons and
// results are label values as they are: the outcome vocabulary.
type MetricsObserver struct{ M *metrics.Metrics }

var _ Observer = MetricsObserver{}

func (MetricsObserver) PassStarted(*Report) {}

// RootPlanned reports the backlog as planned; RootFinished replaces it with
// the state after the root's purges.
func (o MetricsObserver) RootPlanned(_ *Report, rr *RootReport, _ lifecycle.Plan, _ time.Time) {
	o.setTables(rr.Root, rr.Plan)
}

func (o MetricsObserver) setTables(root string, p PlanSummary) {
	o.M.SetRootTables(root, map[string]int{
		metrics.StateLive: p.Live, metrics.StateSoftDeleted: p.SoftDeleted, metrics.StateDue: p.Due,
		metrics.StateOverdue: p.Overdue, metrics.StateOrphanMarker: p.OrphanMarker,
		metrics.StateInvalidMarker: p.InvalidMarker, metrics.StateHeld: p.Held,
	})
	o.M.SetOldestDueMarker(root, p.OldestDue)
}

func (o MetricsObserver) Decision(r *Report, d Decision) {
	if d.Lease != "" {
		o.M.LockAcquisition(outcome.Lease(d.Lease))
	}
	switch d.Action {
	case outcome.Purged:
		o.M.TablePurged()
	case outcome.Conflict:
		o.M.PurgeConflict()
	case outcome.Failed:
		o.M.PurgeFailed(d.Reason)
	case outcome.Skipped, outcome.Held:
		o.M.Skipped(d.Reason, 1)
		if d.Reason == outcome.ReasonLocked && d.Lease == "" {
			// Found held when planning: contention too, though no
			// acquisition was tried.
			o.M.LockAcquisition(outcome.LeaseContended)
		}
	}
	if d.Objects > 0 && !r.DryRun && d.Action != outcome.DryRun {
		o.M.Deleted(int(d.Objects), d.Bytes)
	}
}

func (o MetricsObserver) RootFinished(r *Report, rr *RootReport) {
	for _, d := range rr.Retention {
		result := string(d.Action)
		if d.Action == outcome.Skipped {
			result = string(d.Reason)
		}
		if r.DryRun {
			o.M.Retained(rr.Root, result, 0, 0, 0)
		} else {
			o.M.Retained(rr.Root, result, d.Versions, d.Objects, d.Bytes)
		}
	}
	if b, ok := rr.RetentionBacklog(); ok {
		// Every pass that planned the root's live tables, dry run or not:
		// what retention would still reclaim there now.
		o.M.SetReclaimable(rr.Root, metrics.Reclaimable{Bytes: b.Bytes, Versions: b.Versions})
	}
	if !rr.planNow.IsZero() {
		o.setTables(rr.Root, rr.After())
	}
	switch {
	case rr.Err != nil:
		o.M.RootRefused(rr.Root, outcome.ReasonRootError)
	case rr.Refused != "":
		o.M.RootRefused(rr.Root, rr.Refused)
	}
}

func (o MetricsObserver) PassFinished(r *Report) {
	if r.Err == nil && !r.Interrupted && r.RootsNotVisited == 0 {
		// A root no longer in the pass (a discovered tenant purged empty,
		// a root removed from the config) must not keep its last backlog.
		visited := make([]string, 0, len(r.Roots))
		for _, rr := range r.Roots {
			visited = append(visited, rr.Root)
		}
		o.M.KeepRoots(visited)
	}
	o.M.LedgerWriteFailed(r.LedgerFailures())
	o.M.PassFinished(r.Result(), r.Finished.Sub(r.Started), r.Finished)
}
