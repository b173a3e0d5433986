package main

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/worker"
)

// metricsObserver turns a pass's events into reaper_* metrics.
type metricsObserver struct{ m *metrics.Metrics }

var _ worker.Observer = metricsObserver{}

func (metricsObserver) PassStarted(*worker.Report) {}

func (o metricsObserver) RootPlanned(_ *worker.Report, rr *worker.RootReport, _ lifecycle.Plan, _ time.Time) {
	p := rr.Plan
	o.m.SetRootTables(rr.Root, map[string]int{
		metrics.StateLive: p.Live, metrics.StateSoftDeleted: p.SoftDeleted, metrics.StateDue: p.Due,
		metrics.StateOverdue: p.Overdue, metrics.StateOrphanMarker: p.OrphanMarker,
		metrics.StateInvalidMarker: p.InvalidMarker, metrics.StateHeld: p.Held,
	})
	o.m.SetOldestDueMarker(rr.Root, p.OldestDue)
}

func (o metricsObserver) Decision(_ *worker.Report, d worker.Decision) {
	switch d.Lease {
	case lifecycle.LeaseAcquired:
		o.m.LockAcquisition(metrics.LockAcquired)
	case lifecycle.LeaseContended:
		o.m.LockAcquisition(metrics.LockContended)
	case lifecycle.LeaseError:
		o.m.LockAcquisition(metrics.LockError)
	}
	switch d.Action {
	case worker.ActionPurged:
		o.m.TablePurged()
	case worker.ActionConflict:
		o.m.PurgeConflict()
	case worker.ActionHeld:
		o.m.Skipped(metrics.SkipHeld, 1)
	case worker.ActionFailed:
		o.m.PurgeFailed(failureReason(d.Reason))
	case worker.ActionSkipped:
		switch d.Reason {
		case worker.ReasonNotDue:
			o.m.Skipped(metrics.SkipNotDue, 1)
		case worker.ReasonLocked:
			o.m.Skipped(metrics.SkipLocked, 1)
			if d.Lease == "" {
				// Found held when planning: contention too, though no
				// acquisition was tried.
				o.m.LockAcquisition(metrics.LockContended)
			}
		case worker.ReasonShortTTL:
			o.m.Skipped(metrics.SkipShortTTL, 1)
		case worker.ReasonLimit, worker.ReasonPartial, worker.ReasonInterrupted, worker.ReasonPaused:
			o.m.Skipped(metrics.SkipLimit, 1)
		}
	}
	if d.Objects > 0 && d.Action != worker.ActionDryRun {
		o.m.Deleted(int(d.Objects), d.Bytes)
	}
}

func failureReason(r string) string {
	switch r {
	case worker.ReasonIO:
		return metrics.FailureIO
	case worker.ReasonInvalidMarker:
		return metrics.FailureInvalidMarker
	case worker.ReasonFutureMarker:
		return metrics.FailureFutureMarker
	case worker.ReasonLeaseLost:
		return metrics.FailureLeaseLost
	}
	return metrics.FailureOther
}

func (o metricsObserver) RootFinished(_ *worker.Report, rr *worker.RootReport) {
	switch {
	case rr.Err != nil:
		o.m.RootRefused(rr.Root, metrics.RefusedError)
	case rr.Refused == worker.ReasonBlastRadius:
		o.m.RootRefused(rr.Root, metrics.RefusedBlastRadius)
	case rr.Refused == worker.ReasonPaused:
		o.m.RootRefused(rr.Root, metrics.RefusedPaused)
	}
}

func (o metricsObserver) PassFinished(r *worker.Report) {
	o.m.PassFinished(r.Result(), r.Finished.Sub(r.Started), r.Finished)
}
