package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// A purge's error under a lost lease is errors.Is lock.ErrLost and never
// context.Canceled, whatever mix its requests failed with; under a caller's
// cancellation it stays a cancellation.
func TestWithLeaseCause(t *testing.T) {
	lostErr := fmt.Errorf("lock %q: %w: not renewed", "t.reaper-lock", lock.ErrLost)
	fenced := fmt.Errorf("delete a: %w: %w", objstore.ErrFenced, lostErr)
	cut := fmt.Errorf("delete b: %w", context.Canceled)
	lost, cancelLost := context.WithCancelCause(t.Context())
	cancelLost(lostErr)
	shutdown, cancelShutdown := context.WithCancel(t.Context())
	cancelShutdown()
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		err          error
		lost, cancel bool
	}{
		{"live lease", t.Context(), cut, false, true},
		{"cut short by the lost lease", lost, cut, true, false},
		{"fenced", lost, fenced, true, false},
		// One delete of a batch refused by the fence, its siblings cut short.
		{"fenced beside cut short", lost, &objstore.BatchError{Failed: []objstore.KeyError{{Key: "a", Err: fenced}, {Key: "b", Err: cut}}}, true, false},
		{"other failure", lost, errors.New("boom"), true, false},
		{"caller's shutdown", shutdown, cut, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withLeaseCause(tc.ctx, tc.err)
			require.Equal(t, tc.lost, errors.Is(got, lock.ErrLost), "%v", got)
			require.Equal(t, tc.cancel, errors.Is(got, context.Canceled), "%v", got)
		})
	}
	require.NoError(t, withLeaseCause(lost, nil))
}
