package worker

import (
	"context"
	"errors"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
)

// Action is what a pass did with one table; the audit ledger's action column.
type Action string

const (
	ActionPurged   Action = "purged"
	ActionSkipped  Action = "skipped"
	ActionDryRun   Action = "dry_run"
	ActionFailed   Action = "failed"
	ActionConflict Action = "conflict"
	ActionHeld     Action = "held"
	ActionRefused  Action = "refused"
)

// Reasons are short and stable: metrics labels and ledger values.
const (
	ReasonDue           = "due"
	ReasonOrphanMarker  = "orphan_marker"
	ReasonNotDue        = "not_due"
	ReasonLocked        = "locked"
	ReasonHeld          = "held"
	ReasonShortTTL      = "short_ttl"
	ReasonLimit         = "limit"
	ReasonPartial       = "partial"
	ReasonPaused        = "paused"
	ReasonBlastRadius   = "blast_radius"
	ReasonConflict      = "conflict"
	ReasonInvalidMarker = "invalid_marker"
	ReasonFutureMarker  = "future_marker"
	ReasonLeaseLost     = "lease_lost"
	ReasonInterrupted   = "interrupted"
	ReasonIO            = "io"
	ReasonLive          = "live"
	ReasonNotFound      = "not_found"
	ReasonNotATable     = "not_a_table"
)

// Decision is one table's fate in a pass.
type Decision struct {
	Root   string
	Table  string
	Action Action
	// Reason is one of the Reason constants; Detail says it for people.
	Reason string
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
func classify(res lifecycle.PurgeResult, err error) (Action, string, string) {
	var nd *lifecycle.NotDueError
	switch {
	case err == nil && res.Outcome == lifecycle.OutcomeDryRun:
		return ActionDryRun, ReasonDue, "would be purged"
	case err == nil && res.Outcome == lifecycle.OutcomePartial:
		return ActionSkipped, ReasonPartial, "object budget reached (limits.max_objects_per_table / max_objects_per_pass); the next pass continues"
	case err == nil && res.Outcome == lifecycle.OutcomeOrphanMarker:
		return ActionPurged, ReasonOrphanMarker, "data already gone; marker removed"
	case err == nil:
		return ActionPurged, ReasonDue, "purged"
	case errors.As(err, &nd):
		return ActionSkipped, ReasonNotDue, nd.Error()
	case errors.Is(err, lock.ErrLost):
		// Before anything else: work stopped because the lease may be gone
		// is a failure, whatever the request it cut short said.
		return ActionFailed, ReasonLeaseLost, err.Error()
	case errors.Is(err, lifecycle.ErrHeld):
		return ActionHeld, ReasonHeld, err.Error()
	case errors.Is(err, lifecycle.ErrPaused):
		return ActionSkipped, ReasonPaused, err.Error()
	case errors.Is(err, lifecycle.ErrNotATable):
		return ActionFailed, ReasonNotATable, err.Error()
	case errors.Is(err, lifecycle.ErrConflict):
		return ActionConflict, ReasonConflict, err.Error()
	case errors.Is(err, lifecycle.ErrLocked):
		return ActionSkipped, ReasonLocked, err.Error()
	case errors.Is(err, lifecycle.ErrNotSoftDeleted), errors.Is(err, lifecycle.ErrNotFound):
		// The plan saw a due marker that was gone when the purge read it:
		// revived, or purged by another replica. Nothing was deleted.
		return ActionConflict, ReasonConflict, "marker vanished since the plan (revived, or purged by another process): " + err.Error()
	case errors.Is(err, lifecycle.ErrInvalidMarker):
		return ActionFailed, ReasonInvalidMarker, err.Error()
	case errors.Is(err, lifecycle.ErrNotPurgeable):
		return ActionFailed, ReasonFutureMarker, err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ActionSkipped, ReasonInterrupted, "interrupted; the marker is kept and the next pass finishes it: " + err.Error()
	default:
		return ActionFailed, ReasonIO, err.Error()
	}
}
