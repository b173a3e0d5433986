package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/outcome"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		res    lifecycle.PurgeResult
		err    error
		action outcome.Action
		reason outcome.Reason
	}{
		{"purged", lifecycle.PurgeResult{}, nil, outcome.Purged, outcome.ReasonDue},
		{"dry run", lifecycle.PurgeResult{Outcome: lifecycle.OutcomeDryRun}, nil, outcome.DryRun, outcome.ReasonDue},
		{"partial", lifecycle.PurgeResult{Outcome: lifecycle.OutcomePartial}, nil, outcome.Skipped, outcome.ReasonPartial},
		{"orphan marker", lifecycle.PurgeResult{Outcome: lifecycle.OutcomeOrphanMarker}, nil, outcome.Purged, outcome.ReasonOrphanMarker},
		{"lease lost beats a cancel", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", errors.Join(lock.ErrLost, context.Canceled)), outcome.Failed, outcome.ReasonLeaseLost},
		{"held", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", lifecycle.ErrHeld), outcome.Held, outcome.ReasonHeld},
		{"paused", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", lifecycle.ErrPaused), outcome.Skipped, outcome.ReasonPaused},
		{"locked", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", lifecycle.ErrLocked), outcome.Skipped, outcome.ReasonLocked},
		{"conflict", lifecycle.PurgeResult{}, &lifecycle.ConflictError{Name: "t", Reason: "written after the drop"}, outcome.Conflict, outcome.ReasonConflict},
		{"marker vanished", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", lifecycle.ErrNotFound), outcome.Conflict, outcome.ReasonConflict},
		{"invalid marker", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", lifecycle.ErrInvalidMarker), outcome.Failed, outcome.ReasonInvalidMarker},
		{"cancelled", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", context.Canceled), outcome.Skipped, outcome.ReasonInterrupted},
		{"timed out", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", context.DeadlineExceeded), outcome.Skipped, outcome.ReasonInterrupted},
		// The batch deleter reports context.Cause: the pass deadline itself.
		// It used to fall through to failed/io.
		{"pass deadline as the cause", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", errPassDeadline), outcome.Skipped, outcome.ReasonInterrupted},
		{"anything else", lifecycle.PurgeResult{}, errors.New("boom"), outcome.Failed, outcome.ReasonIO},
		// After the commit a conflict is a stuck table: a failure.
		{"stuck", lifecycle.PurgeResult{Committed: true}, &lifecycle.StuckError{Name: "t", Reason: "marker vanished", Fix: "drop it again"}, outcome.Failed, outcome.ReasonStuck},
		{"stuck beats held", lifecycle.PurgeResult{}, fmt.Errorf("x: %w", errors.Join(lifecycle.ErrHeld, &lifecycle.StuckError{Name: "t"})), outcome.Failed, outcome.ReasonStuck},
		{"undeletable key", lifecycle.PurgeResult{}, &lifecycle.UndeletableKeyError{Name: "t", Key: "t.lance/a//b", Err: errors.New("invalid key")}, outcome.Failed, outcome.ReasonInvalidKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, r, detail := classify(tc.res, tc.err)
			require.Equal(t, tc.action, a)
			require.Equal(t, tc.reason, r)
			require.NotEmpty(t, detail)
		})
	}
}

// stopReason names what stopped a purge from the pass's context.
func TestStopReason(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	deadline, cancel2 := context.WithCancelCause(live)
	cancel2(errPassDeadline)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want outcome.Reason
	}{
		{"pass going on", live, outcome.ReasonInterrupted},
		{"pass cancelled", cancelled, outcome.ReasonShutdown},
		{"pass deadline", deadline, outcome.ReasonDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, stopReason(tc.ctx, outcome.ReasonInterrupted))
		})
	}
}
