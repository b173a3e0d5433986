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

// PurgeOptions.AfterWalk (a pass's walk rails) is called once the identity
// fence's walk has counted the table, on a dry run too, before the intent
// and the commit; its error keeps the table with nothing committed or
// deleted. The TTL floor (MinTTL) is judged at the same point: a table
// with data and a TTL below it is kept; an orphan marker is not.
func TestPurgeAfterWalk(t *testing.T) {
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

		tooBig := errors.New("too big (injected rail)")
		var seen [][2]int64
		intents := 0
		rail := PurgeOptions{
			AfterWalk: func(ctx context.Context, objects, bytes int64) error {
				seen = append(seen, [2]int64{objects, bytes})
				_, err := s.Head(ctx, CommitKey("a"))
				require.ErrorIs(t, err, objstore.ErrNotFound, "called before the commit")
				return tooBig
			},
			BeforeCommit: func(context.Context, int64, int64) error { intents++; return nil },
		}
		for _, dry := range []bool{true, false} {
			opts := rail
			opts.DryRun = dry
			res, err := ns.Purge(ctx, "a", opts)
			require.ErrorIs(t, err, tooBig, "dry run %v", dry)
			require.Zero(t, res.Objects, "dry run %v: nothing deleted or to be", dry)
		}
		require.Equal(t, [][2]int64{{int64(n), size}, {int64(n), size}}, seen)
		require.Zero(t, intents, "the rail decides before the intent")
		require.Equal(t, before, snapshot(t, s), "nothing committed or deleted, the lease released")

		// The TTL floor, judged with the walk's count.
		_, err = ns.Purge(ctx, "a", PurgeOptions{MinTTL: 2 * time.Hour})
		require.ErrorIs(t, err, ErrShortTTL)
		require.Equal(t, before, snapshot(t, s))
		_, err = s.Put(ctx, MarkerKey("gone"), EncodeMarker(c.Now(), time.Minute))
		require.NoError(t, err)
		c.Advance(time.Hour)
		res, err := ns.Purge(ctx, "gone", PurgeOptions{MinTTL: 2 * time.Hour})
		require.NoError(t, err, "an orphan marker has no data to protect")
		require.Equal(t, OutcomeOrphanMarker, res.Outcome)

		res, err = ns.Purge(ctx, "a", PurgeOptions{MinTTL: time.Hour, AfterWalk: func(context.Context, int64, int64) error { return nil }})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
	})
}
