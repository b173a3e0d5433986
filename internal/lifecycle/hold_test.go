//go:build !fuzzonly

package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

func TestLegalHold(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "case42", 1)
		_, err := ns.Drop(ctx, "case42", time.Minute)
		require.NoError(t, err)

		_, err = ns.PlaceHold(ctx, "case42", "")
		require.ErrorContains(t, err, "reason is required")
		h, err := ns.PlaceHold(ctx, "case42", "litigation #42")
		require.NoError(t, err)
		require.Equal(t, "litigation #42", h.Reason)
		_, err = ns.PlaceHold(ctx, "case42", "other")
		require.ErrorIs(t, err, ErrHeld, "an existing hold is kept")
		_, err = ns.PlaceHold(ctx, "nope", "x")
		require.ErrorIs(t, err, ErrNotFound)

		c.Advance(365 * day)
		st := statusOf(t, ns, "case42")
		require.NotNil(t, st.Hold)
		require.Equal(t, "litigation #42", st.Hold.Reason)
		p, err := ns.PlanPurge(ctx, c.Now())
		require.NoError(t, err)
		require.Empty(t, p.Due)
		require.Equal(t, []string{"case42"}, names(p.Held))

		before := snapshot(t, s)
		for _, dry := range []bool{true, false} {
			_, err = ns.Purge(ctx, "case42", PurgeOptions{DryRun: dry})
			require.ErrorIs(t, err, ErrHeld)
			require.ErrorContains(t, err, "litigation #42")
		}
		require.Equal(t, before, snapshot(t, s))

		require.NoError(t, ns.ReleaseHold(ctx, "case42"))
		require.ErrorIs(t, ns.ReleaseHold(ctx, "case42"), ErrNotFound)
		_, err = ns.Purge(ctx, "case42", PurgeOptions{})
		require.NoError(t, err)
		require.Empty(t, snapshot(t, s))
	})
}

// An unreadable hold still blocks: holds fail closed.
func TestGarbageHoldStillHolds(t *testing.T) {
	s := clockMemory()
	c := &clock{}
	ns := newNS(t, s, c)
	lanceTable(t, s, "t", 1)
	_, err := ns.Drop(context.Background(), "t", time.Second)
	require.NoError(t, err)
	_, err = s.Put(context.Background(), HoldKey("t"), []byte("{not json"))
	require.NoError(t, err)
	c.Advance(time.Minute)
	_, err = ns.Purge(context.Background(), "t", PurgeOptions{})
	require.ErrorIs(t, err, ErrHeld)
	require.ErrorContains(t, err, "unreadable hold")
}
