//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// callLog records the reads a store is asked for, as "op key": on an object
// store each is one request (a listing of one page is one).
type callLog struct {
	objstore.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *callLog) Unwrap() objstore.Store { return c.Store }

func (c *callLog) add(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[call]++
}

func (c *callLog) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *callLog) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	c.add("list " + prefix)
	return c.Store.List(ctx, prefix, fn)
}

func (c *callLog) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	c.add("walk " + prefix)
	return c.Store.Walk(ctx, prefix, fn)
}

func (c *callLog) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	c.add("get " + key)
	return c.Store.Get(ctx, key, limit)
}

func (c *callLog) Head(ctx context.Context, key string) (objstore.Object, error) {
	c.add("head " + key)
	return c.Store.Head(ctx, key)
}

// pauseReads are the PAUSE switch's reads, beside every guard's own.
var pauseReads = map[string]int{"list " + PauseKey: 1, "head " + pauseDir: 1}

// guardCalls is what a guard of table name reading kinds should ask s:
// on an object store one listing of "<name>."; on a local disk (whose
// listing reads the whole root) each kind, the lease and the hold by key
// and the hold's folder. Plus the PAUSE switch's two reads.
func guardCalls(s objstore.Store, name string, kinds ...entryKind) map[string]int {
	want := map[string]int{}
	for k, v := range pauseReads {
		want[k] = v
	}
	if !objstore.ScansDirectories(s) {
		want["list "+name+"."] = 1
		return want
	}
	for _, k := range append(kinds, entryLock, entryHold) {
		want["head "+controlKeys[k](name)] = 1
	}
	want["list "+HoldKey(name)+"/"] = 1
	return want
}

// acquire takes name's lease for a test of its guard.
func acquire(t *testing.T, ns *Namespace, name string) *lock.Lease {
	t.Helper()
	lease, err := ns.locker.Acquire(context.Background(), LockKey(name))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	return lease
}

// A guard's reads of the table are one listing on an object store, beside
// the PAUSE read's two: three requests, for a purge and a retention run,
// before and after their commit or record. A regression (a HEAD per
// control object again) fails here on every backend.
func TestGuardReadsTheTableOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		calls := &callLog{Store: s}
		ns := newNS(t, calls, &clock{})

		lanceTable(t, s, "t", 1)
		_, err := ns.Drop(ctx, "t", time.Hour)
		require.NoError(t, err)
		marker, err := s.Head(ctx, MarkerKey("t"))
		require.NoError(t, err)
		g := &guard{ns: ns, name: "t", lease: acquire(t, ns, "t"), markerETag: marker.ETag}
		calls.take()
		require.NoError(t, g.check(ctx))
		require.Equal(t, guardCalls(s, "t", entryMarker), calls.take(), "purge, before its commit")
		commit, err := s.Put(ctx, CommitKey("t"), []byte("{}"))
		require.NoError(t, err)
		g.commitETag = commit.ETag
		require.NoError(t, g.check(ctx))
		require.Equal(t, guardCalls(s, "t", entryMarker, entryCommit), calls.take(), "purge, committed")

		lanceTable(t, s, "r", 1)
		rg := &retainGuard{ns: ns, name: "r", lease: acquire(t, ns, "r")}
		calls.take()
		require.NoError(t, rg.check(ctx))
		require.Equal(t, guardCalls(s, "r", entryMarker, entryCommit), calls.take(), "retention, before its record")
		record, err := s.Put(ctx, RetainKey("r"), []byte("{}"))
		require.NoError(t, err)
		rg.recordETag = record.ETag
		require.NoError(t, rg.check(ctx))
		require.Equal(t, guardCalls(s, "r", entryMarker, entryCommit, entryRetain), calls.take(), "retention, recorded")
	})
}

// The listing of "a." also returns the keys of every table whose name
// starts with "a." ("a.b", "a.deleted", "a.reaper-hold"): their markers,
// holds, leases, commits and records are not a's, and a's own are found
// among them.
func TestGuardTellsTableFromPrefixSiblings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		ns := newNS(t, s, &clock{})
		put := func(key string) {
			_, err := s.Put(ctx, key, []byte(`{"reason":"case 3"}`))
			require.NoError(t, err)
		}
		lanceTable(t, s, "a", 1)
		_, err := ns.Drop(ctx, "a", time.Hour)
		require.NoError(t, err)
		lanceTable(t, s, "x", 1)
		for i, sib := range []string{"a.b", "a.deleted", "a.reaper-hold", "x.y", "x.deleted"} {
			lanceTable(t, s, sib, 1)
			hold := HoldKey(sib) // object and folder forms, by turns: a key is not both
			if i%2 == 1 {
				hold += "/ticket"
			}
			for _, key := range []string{MarkerKey(sib), hold, LockKey(sib), CommitKey(sib), RetainKey(sib)} {
				put(key)
			}
		}
		marker, err := s.Head(ctx, MarkerKey("a"))
		require.NoError(t, err)
		g := &guard{ns: ns, name: "a", lease: acquire(t, ns, "a"), markerETag: marker.ETag}
		require.NoError(t, g.check(ctx), "a's siblings hold, lock and commit nothing of a")
		rg := &retainGuard{ns: ns, name: "x", lease: acquire(t, ns, "x")}
		require.NoError(t, rg.check(ctx), "x.y.deleted and x.deleted.deleted do not drop x")

		put(HoldKey("a") + "/ticket")
		require.ErrorIs(t, g.check(ctx), ErrHeld, "a's own hold, in folder form, among its siblings'")
		put(MarkerKey("x"))
		var ce *ConflictError
		require.ErrorAs(t, rg.check(ctx), &ce, "x's own marker")
		require.Contains(t, ce.Reason, MarkerKey("x")+" appeared")
	})
}

// The guard's listing sees a hold in every form an operator makes it (the
// object, a folder with content, a console's folder object), on every
// backend that can hold it.
func TestGuardSeesEveryHoldForm(t *testing.T) {
	forms := append([]struct {
		name string
		make func(ctx context.Context, s objstore.Store, name string) bool
	}{{"object", func(ctx context.Context, s objstore.Store, name string) bool {
		_, err := s.Put(ctx, HoldKey(name), []byte(`{"reason":"case 5"}`))
		return err == nil
	}}}, holdForms...)
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s objstore.Store) {
				ctx := context.Background()
				ns := newNS(t, s, &clock{})
				lanceTable(t, s, "t", 1)
				rg := &retainGuard{ns: ns, name: "t", lease: acquire(t, ns, "t")}
				require.NoError(t, rg.check(ctx))
				if !form.make(ctx, s, "t") {
					return // not a form this backend can hold
				}
				require.ErrorIs(t, rg.check(ctx), ErrHeld)
			})
		})
	}
	t.Run("an empty local directory", func(t *testing.T) {
		w, root := localWorld(t)
		ns := newNS(t, w.store, &clock{})
		lanceTable(t, w.store, "t", 1)
		rg := &retainGuard{ns: ns, name: "t", lease: acquire(t, ns, "t")}
		require.NoError(t, os.Mkdir(filepath.Join(root, HoldKey("t")), 0o755))
		require.ErrorIs(t, rg.check(context.Background()), ErrHeld)
	})
}

// pageCounter counts the pages a listing of one prefix delivered.
type pageCounter struct {
	objstore.Store
	prefix string
	pages  atomic.Int64
}

func (p *pageCounter) Unwrap() objstore.Store { return p.Store }

func (p *pageCounter) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	return p.Store.List(ctx, prefix, func(pg objstore.Page) error {
		if prefix == p.prefix {
			p.pages.Add(1)
		}
		return fn(pg)
	})
}

// A name with many siblings takes more than one page: the guard follows
// the pages until it has passed every key the table can have, finds the
// hold on a later page, and reads no page after that.
func TestGuardPagesThroughSiblings(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	mem.PageSize = 3
	s := objstoretest.NewClockStore(mem)
	pc := &pageCounter{Store: s, prefix: "a."}
	ns := newNS(t, pc, &clock{})
	lanceTable(t, s, "a", 1)
	_, err := ns.Drop(ctx, "a", time.Hour)
	require.NoError(t, err)
	for _, sib := range []string{"a.0", "a.1", "a.2", "a.3", "a.4", "a.5", "a.6", "a.7", "a.8", "a.9", // before a's keys
		"a.x0", "a.x1", "a.x2", "a.x3", "a.x4", "a.x5", "a.x6", "a.x7", "a.x8", "a.x9"} { // after them
		_, err := s.Put(ctx, MarkerKey(sib), []byte("{}"))
		require.NoError(t, err)
	}
	marker, err := s.Head(ctx, MarkerKey("a"))
	require.NoError(t, err)
	g := &guard{ns: ns, name: "a", lease: acquire(t, ns, "a"), markerETag: marker.ETag}
	require.NoError(t, g.check(ctx))
	_, err = s.Put(ctx, HoldKey("a"), []byte(`{"reason":"case 4"}`))
	require.NoError(t, err)
	pc.pages.Store(0)
	err = g.check(ctx)
	require.ErrorIs(t, err, ErrHeld)
	require.ErrorContains(t, err, "case 4")
	// 10 siblings, a.deleted, a.lance/, a.reaper-hold, a.reaper-lock, then
	// a.x0: the fifth page of three passes a.reaper-retain.
	require.Equal(t, int64(5), pc.pages.Load(), "pages of 3 read, of 8")
}

var errListing = errors.New("listing broke (injected)")

// listFault spoils the listing of one prefix: it fails after its first
// after pages, repeats each page's first object (dup) or leaves the ETags
// empty (noETag).
type listFault struct {
	objstore.Store
	prefix string
	after  int
	dup    bool
	noETag bool
}

func (f *listFault) Unwrap() objstore.Store { return f.Store }

func (f *listFault) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if prefix != f.prefix {
		return f.Store.List(ctx, prefix, fn)
	}
	page := 0
	return f.Store.List(ctx, prefix, func(p objstore.Page) error {
		page++
		if f.after > 0 && page > f.after {
			return errListing
		}
		if f.noETag {
			objs := make([]objstore.Object, len(p.Objects))
			for i, o := range p.Objects {
				o.ETag = ""
				objs[i] = o
			}
			p.Objects = objs
		}
		if err := fn(p); err != nil {
			return err
		}
		if f.dup && len(p.Objects) > 0 {
			return fn(objstore.Page{Objects: p.Objects[:1]})
		}
		return nil
	})
}

// The guard fails closed on its listing: a page that fails, or a key
// listed twice, stops the purge before its commit, nothing deleted.
func TestGuardListingFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault listFault
		want  string
	}{
		{"a failed page", listFault{after: 1}, errListing.Error()},
		{"a key listed twice", listFault{dup: true}, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := memstore.New()
			mem.PageSize = 1
			s := objstoretest.NewClockStore(mem)
			c := &clock{}
			f := tc.fault
			f.Store, f.prefix = s, "t."
			ns := newNS(t, &f, c)
			lanceTable(t, s, "t", 3)
			_, err := ns.Drop(ctx, "t", time.Hour)
			require.NoError(t, err)
			c.Advance(2 * time.Hour)
			before := snapshot(t, s)
			_, err = ns.Purge(ctx, "t", PurgeOptions{})
			require.ErrorContains(t, err, tc.want)
			require.NotErrorIs(t, err, ErrHeld)
			requireSameData(t, before, snapshot(t, s), "nothing deleted")
		})
	}
}

// A listing may leave ETags empty: the guard reads those objects by key,
// so an unchanged marker passes and a rewritten one is still seen.
func TestGuardReadsUnlistedETags(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	calls := &callLog{Store: &listFault{Store: s, prefix: "t.", noETag: true}}
	ns := newNS(t, calls, &clock{})
	lanceTable(t, s, "t", 1)
	_, err := ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	marker, err := s.Head(ctx, MarkerKey("t"))
	require.NoError(t, err)
	g := &guard{ns: ns, name: "t", lease: acquire(t, ns, "t"), markerETag: marker.ETag}
	calls.take()
	require.NoError(t, g.check(ctx))
	got := calls.take()
	require.Equal(t, 1, got["head "+MarkerKey("t")], "the marker read by key")
	require.Positive(t, got["head "+LockKey("t")], "the lease read back by key")
	_, err = s.Put(ctx, MarkerKey("t"), EncodeMarker(time.Now(), time.Hour))
	require.NoError(t, err)
	var ce *ConflictError
	require.ErrorAs(t, g.check(ctx), &ce)
	require.Contains(t, ce.Reason, "changed during the purge")
}
