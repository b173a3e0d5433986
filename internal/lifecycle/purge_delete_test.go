//go:build !fuzzonly

package lifecycle

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// A batch that waits for a free concurrency slot is guarded when it is
// sent, not when it was queued: a hold placed while it waited stops it.
// Before, the guard ran first and the batch then waited, so a hold placed
// during the wait let one more batch through (issue 25, suspected).
func TestBatchGuardedWhenSent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 4)
		lease, err := p.ns.locker.Acquire(ctx, LockKey("t"))
		require.NoError(t, err)
		defer p.ns.release(ctx, lease, "t")
		marker, err := w.store.Head(ctx, MarkerKey("t"))
		require.NoError(t, err)
		g := &guard{ns: p.ns, name: "t", lease: lease, markerETag: marker.ETag}
		d := newBatchDeleter(lease.Context(), p.pause, g, "t", PurgeOptions{DeleteConcurrency: 1})
		waiting := make(chan struct{})
		var once sync.Once
		d.slots.waiting = func() { once.Do(func() { close(waiting) }) }

		keys := keysUnder(snapshot(t, w.store), "t.lance/")
		first := []keyEntry{{key: keys[0]}}
		second := []keyEntry{{key: keys[1]}}
		frozen := p.pause.PauseBefore(objstoretest.OpDeleteBatch, "t.lance/", 0)
		require.NoError(t, d.submit(first))
		<-frozen.Reached()
		queued := make(chan error, 1)
		go func() { queued <- d.submit(second) }()
		<-waiting // the second batch waits for the first's slot
		_, err = w.proc("operator", 0).ns.PlaceHold(ctx, "t", "case 11")
		require.NoError(t, err)
		frozen.Release()
		require.ErrorIs(t, <-queued, ErrHeld)
		require.ErrorIs(t, d.wait(), ErrHeld)
		_, err = w.store.Head(ctx, keys[1])
		require.NoError(t, err, "the queued batch was never sent")
		objects, _ := d.totals()
		require.Equal(t, int64(1), objects)
	})
}
