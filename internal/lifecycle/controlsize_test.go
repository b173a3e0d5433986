//go:build !fuzzonly

package lifecycle

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// Control objects (markers, holds, leases, commits) are read with a size
// cap: one over it is reported for its table alone, failing closed, and
// the rest of the root is planned and purged as usual. Before the cap, a
// multi-GB marker was read whole and every pass died out of memory.
func TestOversizedControlObjects(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		for _, n := range []string{"bigmarker", "bighold", "biglease", "bigcommit", "fine"} {
			lanceTable(t, s, n, 1)
			_, err := ns.Drop(ctx, n, time.Hour)
			require.NoError(t, err)
		}
		// JSON a parser would accept, padded past the cap with whitespace:
		// only the cap refuses it.
		pad := func(body string, limit int) []byte {
			return append([]byte(body), bytes.Repeat([]byte(" "), limit)...)
		}
		marker, _, err := s.Get(ctx, MarkerKey("bigmarker"), MaxControlBytes)
		require.NoError(t, err)
		_, err = s.Put(ctx, MarkerKey("bigmarker"), pad(string(marker), MaxControlBytes))
		require.NoError(t, err)
		_, err = s.Put(ctx, HoldKey("bighold"), pad(`{"reason":"x"}`, MaxControlBytes))
		require.NoError(t, err)
		_, err = s.Put(ctx, LockKey("biglease"), pad(`{}`, lock.MaxLeaseBytes))
		require.NoError(t, err)
		_, err = s.Put(ctx, CommitKey("bigcommit"), pad(`{}`, MaxControlBytes))
		require.NoError(t, err)
		c.Advance(2 * time.Hour)

		st := statusOf(t, ns, "bigmarker")
		require.Equal(t, StateInvalidMarker, st.State)
		require.Contains(t, st.Problem, "larger than the read limit")
		require.Equal(t, StateUnreadable, statusOf(t, ns, "bigcommit").State)
		require.NotNil(t, statusOf(t, ns, "bighold").Hold, "an oversized hold still holds")
		require.NotNil(t, statusOf(t, ns, "biglease").Lease, "an oversized lease is shown as held")

		p, err := ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		require.Equal(t, []string{"fine"}, names(p.Due))
		require.ElementsMatch(t, []string{"bigmarker", "bigcommit"}, names(p.Invalid))
		require.Equal(t, []string{"bighold"}, names(p.Held))
		require.Equal(t, []string{"biglease"}, names(p.Busy))

		before := snapshot(t, s)
		for _, n := range []string{"bigmarker", "bighold", "biglease", "bigcommit"} {
			_, err := ns.Purge(ctx, n, PurgeOptions{})
			require.Error(t, err, "purge %s", n)
		}
		after := snapshot(t, s)
		for k, etag := range before {
			if !bytes.HasPrefix([]byte(k), []byte("fine")) {
				require.Equal(t, etag, after[k], "%s kept as it was", k)
			}
		}
		res, err := ns.Purge(ctx, "fine", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
	})
}
