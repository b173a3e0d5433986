package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// listCounter counts root listings.
type listCounter struct {
	objstore.Store
	lists atomic.Int64
}

func (l *listCounter) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	l.lists.Add(1)
	return l.Store.List(ctx, prefix, fn)
}

// The plan names the leases without a marker, and sweeping those costs no
// second listing of the root: an expired lone lease goes, a live one, one
// beside a marker (a purge takes it over), one whose table was dropped
// after the plan, and an unreadable one stay.
func TestSweepStaleLeasesFromThePlan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		lc := &listCounter{Store: s}
		ns := newNS(t, lc, c)
		now := c.Now()
		lease := func(expires time.Time) string {
			return fmt.Sprintf(`{"version":1,"owner":"dead-host/1/ab","token":"00112233445566778899aabbccddeeff","generation":3,"acquired_at_ms":%d,"renewed_at_ms":%[1]d,"expires_at_ms":%d}`,
				expires.Add(-time.Minute).UnixMilli(), expires.UnixMilli())
		}
		lanceTable(t, s, "live", 1)
		lanceTable(t, s, "dropped", 1)
		lanceTable(t, s, "later", 1)
		_, err := ns.Drop(ctx, "dropped", time.Hour)
		require.NoError(t, err)
		for k, v := range map[string]string{
			LockKey("gone"):    lease(now.Add(-time.Second)),
			LockKey("live"):    lease(now.Add(-time.Second)),
			LockKey("later"):   lease(now.Add(-time.Second)),
			LockKey("working"): lease(now.Add(time.Hour)),
			LockKey("dropped"): lease(now.Add(-time.Second)),
			LockKey("garbage"): "not a lease",
		} {
			_, err := s.Put(ctx, k, []byte(v))
			require.NoError(t, err)
		}

		p, err := ns.PlanPurge(ctx, now)
		require.NoError(t, err)
		require.Equal(t, []string{"garbage", "gone", "later", "live", "working"}, p.LeaseOnly)
		_, err = ns.Drop(ctx, "later", time.Hour) // after the plan's listing
		require.NoError(t, err)

		lists := lc.lists.Load()
		swept, err := ns.SweepStaleLeases(ctx, now, p.LeaseOnly)
		require.NoError(t, err)
		require.Equal(t, []string{LockKey("gone"), LockKey("live")}, swept)
		require.Equal(t, lists, lc.lists.Load(), "no listing")
		snap := snapshot(t, s)
		for _, k := range []string{LockKey("working"), LockKey("dropped"), LockKey("later"), LockKey("garbage")} {
			require.Contains(t, snap, k)
		}
		require.NotContains(t, snap, LockKey("gone"))
	})
}
