package worker

import (
	"context"
	"errors"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
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
	}
	if a, r, detail, ok := tableErrorOutcome("purge", err); ok {
		return a, r, detail
	}
	switch {
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
