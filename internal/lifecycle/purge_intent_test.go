//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// PurgeOptions.BeforeCommit (the audit journal's intent) is called once,
// after the identity fence's walk, with what the purge is about to delete,
// and before the commit exists; its error stops the purge with nothing
// committed or deleted and the lease released. A dry run never calls it.
func TestPurgeBeforeCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		n := lanceTable(t, s, "a", 3)
		_, err := ns.Drop(ctx, "a", time.Hour)
		require.NoError(t, err)
		c.Advance(time.Hour + time.Second)
		size := tableBytes(t, s, "a")
		before := snapshot(t, s)

		calls := 0
		_, err = ns.Purge(ctx, "a", PurgeOptions{DryRun: true, BeforeCommit: func(context.Context, int64, int64) error {
			calls++
			return nil
		}})
		require.NoError(t, err)
		require.Zero(t, calls, "a dry run records no intent")

		refused := errors.New("journal refused (injected)")
		_, err = ns.Purge(ctx, "a", PurgeOptions{BeforeCommit: func(ctx context.Context, objects, bytes int64) error {
			calls++
			require.Equal(t, int64(n), objects)
			require.Equal(t, size, bytes)
			_, err := s.Head(ctx, CommitKey("a"))
			require.ErrorIs(t, err, objstore.ErrNotFound, "called before the commit")
			return refused
		}})
		require.ErrorIs(t, err, refused)
		require.Equal(t, 1, calls)
		require.Equal(t, before, snapshot(t, s), "nothing committed or deleted, the lease released")

		res, err := ns.Purge(ctx, "a", PurgeOptions{BeforeCommit: func(context.Context, int64, int64) error {
			calls++
			return nil
		}})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
		require.Equal(t, 2, calls)

		// An orphan marker's purge deletes the marker: its intent too.
		_, err = s.Put(ctx, MarkerKey("gone"), EncodeMarker(c.Now(), time.Hour))
		require.NoError(t, err)
		c.Advance(time.Hour + time.Second)
		res, err = ns.Purge(ctx, "gone", PurgeOptions{BeforeCommit: func(_ context.Context, objects, bytes int64) error {
			calls++
			require.Zero(t, objects+bytes)
			return nil
		}})
		require.NoError(t, err)
		require.Equal(t, OutcomeOrphanMarker, res.Outcome)
		require.Equal(t, 3, calls)
	})
}
