package worker

import (
	"context"
	"errors"
	"time"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// Decision is one table's fate in a pass.
type Decision struct {
	Root   string
	Table  string
	Action outcome.Action
	// Reason is the outcome vocabulary's; Detail says it for people.
	Reason outcome.Reason
	Detail string
	// Status is the table as planned (marker times, TTL).
	Status  lifecycle.TableStatus
	Objects int64
	Bytes   int64
	Started time.Time
	// Finished equals Started for decisions that did no work.
	Finished time.Time
	Err      error
	// Lease is how a purge attempt's lease went (lifecycle.Lease*); "" when
	// no lease was tried.
	Lease string
}

// classify maps a purge's result to an action and reason.
func classify(res lifecycle.PurgeResult, err error) (outcome.Action, outcome.Reason, string) {
	var nd *lifecycle.NotDueError
	switch {
	case err == nil && res.Outcome == lifecycle.OutcomeDryRun:
		return outcome.DryRun, outcome.ReasonDue, "would be purged"
	case err == nil && res.Outcome == lifecycle.OutcomePartial:
		return outcome.Skipped, outcome.ReasonPartial, "object budget reached (limits.max_objects_per_table / max_objects_per_pass); the next pass continues"
	case err == nil && res.Outcome == lifecycle.OutcomeOrphanMarker:
		return outcome.Purged, outcome.ReasonOrphanMarker, "data already gone; marker removed"
	case err == nil:
		return outcome.Purged, outcome.ReasonDue, "purged"
	case errors.As(err, &nd):
		return outcome.Skipped, outcome.ReasonNotDue, nd.Error()
	case errors.Is(err, objstore.ErrRootChanged):
		// Before a lost lease: a root that moved also fails the lease's
		// renewal and the guard, and the move is what an operator must
		// know (another directory, perhaps a live database, is there now).
		var rc *objstore.RootChangedError
		if errors.As(err, &rc) {
			return outcome.Failed, outcome.ReasonRootChanged, rc.Error()
		}
		return outcome.Failed, outcome.ReasonRootChanged, err.Error()
	case errors.Is(err, lock.ErrLost):
		// Before anything else: work stopped because the lease may be gone
		// is a failure, whatever the request it cut short said.
		return outcome.Failed, outcome.ReasonLeaseLost, err.Error()
	case errors.Is(err, lifecycle.ErrStuck):
		// Before conflicts: after the commit, what stopped the purge left
		// a partly destroyed table, a failure whatever caused it.
		return outcome.Failed, outcome.ReasonStuck, err.Error()
	case errors.Is(err, lifecycle.ErrUndeletableKey):
		return outcome.Failed, outcome.ReasonInvalidKey, err.Error()
	case errors.Is(err, ledger.ErrJournal):
		return outcome.Failed, outcome.ReasonLedger, "the audit journal could not record the purge's intent, so nothing was committed or deleted: " + err.Error()
	case errors.Is(err, lifecycle.ErrHeld):
		return outcome.Held, outcome.ReasonHeld, err.Error()
	case errors.Is(err, lifecycle.ErrPaused):
		return outcome.Skipped, outcome.ReasonPaused, err.Error()
	case errors.Is(err, lifecycle.ErrNotATable):
		return outcome.Failed, outcome.ReasonNotATable, err.Error()
	case errors.Is(err, lifecycle.ErrConflict):
		return outcome.Conflict, outcome.ReasonConflict, err.Error()
	case errors.Is(err, lifecycle.ErrLocked):
		return outcome.Skipped, outcome.ReasonLocked, err.Error()
	case errors.Is(err, lifecycle.ErrNotSoftDeleted), errors.Is(err, lifecycle.ErrNotFound):
		// The plan saw a due marker that was gone when the purge read it:
		// revived, or purged by another replica. Nothing was deleted.
		return outcome.Conflict, outcome.ReasonConflict, "marker vanished since the plan (revived, or purged by another process): " + err.Error()
	case errors.Is(err, lifecycle.ErrInvalidMarker):
		return outcome.Failed, outcome.ReasonInvalidMarker, err.Error()
	case errors.Is(err, lifecycle.ErrNotPurgeable):
		return outcome.Failed, outcome.ReasonFutureMarker, err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errPassDeadline):
		// stopReason says whether the pass stopped it.
		return outcome.Skipped, outcome.ReasonInterrupted, "stopped mid-purge; the marker is kept and the next pass finishes it: " + err.Error()
	default:
		return outcome.Failed, outcome.ReasonIO, err.Error()
	}
}

// stopReason names what stopped a purge cut short by a context: the pass's
// deadline (limits.max_pass_duration), its shutdown (a cancelled pass
// context), or else the purge's own timeout (interrupted).
func stopReason(passCtx context.Context, r outcome.Reason) outcome.Reason {
	switch {
	case errors.Is(context.Cause(passCtx), errPassDeadline):
		return outcome.ReasonDeadline
	case passCtx.Err() != nil:
		return outcome.ReasonShutdown
	}
	return r
}
