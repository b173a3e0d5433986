//go:build !fuzzonly

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

func (l *listCounter) Unwrap() objstore.Store { return l.Store }

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
		lease := func() string {
			now := c.Now()
			return fmt.Sprintf(`{"version":2,"owner":"dead-host/1/ab","token":"00112233445566778899aabbccddeeff","generation":3,"ttl_ms":60000,"acquired_at_ms":%d,"renewed_at_ms":%[1]d,"expires_at_ms":%d}`,
				now.UnixMilli(), now.Add(time.Minute).UnixMilli())
		}
		lanceTable(t, s, "live", 1)
		lanceTable(t, s, "dropped", 1)
		lanceTable(t, s, "later", 1)
		_, err := ns.Drop(ctx, "dropped", time.Hour)
		require.NoError(t, err)
		put := func(k, v string) {
			_, err := s.Put(ctx, k, []byte(v))
			require.NoError(t, err)
		}
		for _, k := range []string{LockKey("gone"), LockKey("live"), LockKey("later"), LockKey("dropped")} {
			put(k, lease())
		}
		put(LockKey("garbage"), "not a lease")
		// The dead leases' TTL, the store's resolution and the skew
		// allowance pass by the store's clock; then a live one is written.
		c.Advance(time.Minute + time.Second + DefaultSkewAllowance + time.Millisecond)
		put(LockKey("working"), lease())

		p, err := ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		require.Equal(t, []string{"garbage", "gone", "later", "live", "working"}, p.LeaseOnly)
		_, err = ns.Drop(ctx, "later", time.Hour) // after the plan's listing
		require.NoError(t, err)

		lists := lc.lists.Load()
		swept, err := ns.SweepStaleLeases(ctx, p.LeaseOnly)
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
