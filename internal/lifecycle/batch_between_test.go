//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// The marker is read between keys once markerEveryKeys keys or markerEvery
// have gone by since the last read (the guard's, or its own), never more
// often, one read at a time; its refusal is final.
func TestBetweenKeysReadsTheMarkerBoundedly(t *testing.T) {
	ctx := t.Context()
	var now time.Time
	reads := 0
	var refuse error
	b := newBetweenKeys(func(context.Context) error { reads++; return refuse }, func() time.Time { return now })

	for range markerEveryKeys - 1 {
		require.NoError(t, b.check(ctx))
	}
	require.Zero(t, reads, "fewer keys than markerEveryKeys, no time gone by: no read")
	require.NoError(t, b.check(ctx))
	require.Equal(t, 1, reads, "the markerEveryKeys-th key reads it")

	now = now.Add(markerEvery - time.Millisecond)
	require.NoError(t, b.check(ctx))
	require.Equal(t, 1, reads, "just short of markerEvery: no read")
	now = now.Add(time.Millisecond)
	require.NoError(t, b.check(ctx))
	require.Equal(t, 2, reads, "markerEvery gone by reads it, after one key")

	for range markerEveryKeys - 2 {
		require.NoError(t, b.check(ctx))
	}
	b.guarded() // the guard read it before a new batch: the count starts again
	require.NoError(t, b.check(ctx))
	require.Equal(t, 2, reads)

	refuse = errors.New("dropped")
	now = now.Add(markerEvery)
	require.ErrorIs(t, b.check(ctx), refuse)
	require.Equal(t, 3, reads)
	refuse = nil
	require.ErrorIs(t, b.check(ctx), b.stopped(), "final")
	require.Equal(t, 3, reads, "not read again once refused")
}

// atGone runs act once, the first time the lease holder's clock is read
// after the file at path is gone. It is the test's hook into a batch on a
// local disk: the lease's fence (Lease.Allow) reads that clock immediately
// before every unlink, so act runs after the unlink of path and before the
// next one, whichever goroutine reads the clock first (the others wait for
// act to finish).
type atGone struct {
	mu   sync.Mutex
	path string
	act  func()
	done bool
	now  func() time.Time
}

func (a *atGone) clock() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.done && a.path != "" {
		if _, err := os.Lstat(a.path); errors.Is(err, fs.ErrNotExist) {
			a.done = true
			a.act()
		}
	}
	return a.now()
}

// localBatchNS opens a namespace over a fresh local root whose store's and
// host's clocks c moves and whose lease clock is at's, deleting in batches
// of the stores' limit (1,000 keys). It returns the root's directory.
func localBatchNS(t *testing.T, c *clock, at *atGone) (*Namespace, objstore.Store, string) {
	dir := t.TempDir()
	ls, err := local.Open(dir)
	require.NoError(t, err)
	s := objstoretest.NewClockStore(ls)
	c.attach(s)
	at.now = c.Now
	ns, err := New(s, Options{Now: c.Now, LeaseClock: at.clock, Logger: quiet(), SpillDir: t.TempDir(), Owner: "test"})
	require.NoError(t, err)
	return ns, s, dir
}

// orphanIndex writes n files of an index no manifest references into table
// name (deleted with DeleteUnverified: _indices/ has no listing cutoff)
// and returns their keys, in the order a batch deletes them.
func orphanIndex(t *testing.T, s objstore.Store, name string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s_indices/00000000-0000-4000-8000-000000000000/part-%04d.idx", TableDir(name), i)
		_, err := s.Put(context.Background(), keys[i], []byte("orphan"))
		require.NoError(t, err)
	}
	return keys
}

// present counts the keys still in the store.
func present(t *testing.T, s objstore.Store, keys []string) int {
	t.Helper()
	snap := snapshot(t, s)
	n := 0
	for _, k := range keys {
		if _, ok := snap[k]; ok {
			n++
		}
	}
	return n
}

// deletedSince counts the keys of before that are gone.
func deletedSince(before, after map[string]string) int64 {
	var n int64
	for k := range before {
		if _, ok := after[k]; !ok {
			n++
		}
	}
	return n
}

// A table dropped while a retention run is inside a delete batch on a
// local disk stops the run within markerEveryKeys keys, not after the
// batch (up to 1,000 keys): the marker is read between keys. The run
// reports a conflict, what it did delete, and leaves its record for the
// table's purge. Before, the whole batch went.
func TestRetainStopsInsideABatchAtADrop(t *testing.T) {
	ctx := context.Background()
	c := &clock{}
	at := &atGone{}
	ns, s, dir := localBatchNS(t, c, at)
	putLanceFixture(t, s, "t")
	policy := fixturePolicy(t, s, "t")
	policy.DeleteUnverified = true
	orphans := orphanIndex(t, s, "t", 300)
	const dropAfter = 10
	at.path = filepath.Join(dir, filepath.FromSlash(orphans[dropAfter-1]))
	at.act = func() {
		// A LanceDB client drops the table: it writes the marker itself.
		require.NoError(t, os.WriteFile(filepath.Join(dir, MarkerKey("t")), EncodeMarker(time.Now(), time.Hour), 0o644))
	}
	before := snapshot(t, s)

	res, err := ns.Retain(ctx, "t", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "inside a delete batch")
	require.True(t, at.done, "the drop landed inside the batch")
	left := present(t, s, orphans)
	require.GreaterOrEqual(t, left, len(orphans)-dropAfter-markerEveryKeys,
		"stopped within markerEveryKeys keys of the drop, not after the batch")
	require.Less(t, left, len(orphans)-dropAfter+1, "the keys before the drop went")
	after := snapshot(t, s)
	require.Contains(t, after, RetainKey("t"), "the record stays for the table's purge")
	require.Contains(t, after, MarkerKey("t"))
	delete(after, MarkerKey("t"))
	delete(before, RetainKey("t"))
	require.Equal(t, deletedSince(before, after), res.Objects, "the result counts what the stopped batch deleted")
}

// Ctrl-C (the context cancelled) while a retention run is inside a delete
// batch on a local disk stops it at the next key. Before, the whole batch
// went first.
func TestRetainStopsInsideABatchAtCancel(t *testing.T) {
	c := &clock{}
	at := &atGone{}
	ns, s, dir := localBatchNS(t, c, at)
	putLanceFixture(t, s, "t")
	policy := fixturePolicy(t, s, "t")
	policy.DeleteUnverified = true
	orphans := orphanIndex(t, s, "t", 300)
	const cancelAfter = 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at.path = filepath.Join(dir, filepath.FromSlash(orphans[cancelAfter-1]))
	at.act = cancel

	_, err := ns.Retain(ctx, "t", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, at.done, "cancelled inside the batch")
	require.Equal(t, len(orphans)-cancelAfter, present(t, s, orphans), "stopped at the next key")
	require.Contains(t, snapshot(t, s), RetainKey("t"), "the record stays for the next run")
}

// Ctrl-C while a purge is inside a delete batch on a local disk stops it
// at the next key too (the same batch deleter); the table stays committed
// for the next pass to finish. Before, the whole batch went first.
func TestPurgeStopsInsideABatchAtCancel(t *testing.T) {
	c := &clock{}
	at := &atGone{}
	ns, s, dir := localBatchNS(t, c, at)
	lanceTable(t, s, "t", 300)
	data := keysUnder(snapshot(t, s), TableDir("t")+"data/")
	require.Greater(t, len(data), 200)
	_, err := ns.Drop(context.Background(), "t", time.Hour)
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)
	const cancelAfter = 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at.path = filepath.Join(dir, filepath.FromSlash(data[cancelAfter-1]))
	at.act = cancel

	_, err = ns.Purge(ctx, "t", PurgeOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, at.done, "cancelled inside the batch")
	require.Equal(t, len(data)-cancelAfter, present(t, s, data), "stopped at the next key")
	require.Equal(t, StatePartiallyPurged, statusOf(t, ns, "t").State)
}
