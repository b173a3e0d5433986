//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

const day = 24 * time.Hour

func TestDropStatusRevive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "orders", 2)
		require.Equal(t, StateExists, statusOf(t, ns, "orders").State)

		before := c.Now()
		m, err := ns.Drop(ctx, "orders", 2*time.Hour)
		require.NoError(t, err)
		require.Equal(t, int64(2*time.Hour/time.Millisecond), m.TTLMs)
		body, obj, err := s.Get(ctx, "orders.deleted", 1<<20)
		require.NoError(t, err)
		require.Regexp(t, `^\{"deleted_at_ms":\d+,"ttl_ms":7200000\}$`, string(body))
		require.InDelta(t, before.UnixMilli(), m.DeletedAtMs, 5000)

		st := statusOf(t, ns, "orders")
		require.Equal(t, StateSoftDeleted, st.State)
		require.Equal(t, 2*time.Hour, st.TTL)
		// Due once deleted_at + ttl and the marker's LastModified + ttl
		// have passed by the store's clock.
		byDropper, byStore := time.UnixMilli(m.DeletedAtMs+7200000), st.MarkerModified.Add(2*time.Hour)
		require.Equal(t, max(byDropper.UnixNano(), byStore.UnixNano()), st.PurgeAfter.UnixNano())
		require.InDelta(t, m.DeletedAtMs+7200000, st.PurgeAfter.UnixMilli(), 2000)
		require.False(t, st.Due(c.Now()))

		// A second drop never rewrites the marker (that would restart its clock).
		c.Advance(time.Hour)
		_, err = ns.Drop(ctx, "orders", time.Minute)
		require.ErrorIs(t, err, ErrAlreadyDeleted)
		body2, obj2, err := s.Get(ctx, "orders.deleted", 1<<20)
		require.NoError(t, err)
		require.Equal(t, string(body), string(body2))
		require.Equal(t, obj.ETag, obj2.ETag)

		require.NoError(t, ns.Revive(ctx, "orders"))
		require.Equal(t, StateExists, statusOf(t, ns, "orders").State)
		_, err = s.Head(ctx, "orders.deleted")
		require.ErrorIs(t, err, objstore.ErrNotFound)
		_, err = s.Head(ctx, LockKey("orders"))
		require.ErrorIs(t, err, objstore.ErrNotFound, "revive released its lease")
		require.Len(t, keysUnder(snapshot(t, s), "orders.lance/"), 9, "revive leaves data untouched")

		require.ErrorIs(t, ns.Revive(ctx, "orders"), ErrNotSoftDeleted)
		require.ErrorIs(t, ns.Revive(ctx, "nope"), ErrNotFound)
		_, err = ns.Drop(ctx, "nope", 0)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = ns.Drop(ctx, "../etc", 0)
		require.ErrorIs(t, err, ErrInvalidName)
		require.Equal(t, StateNotFound, statusOf(t, ns, "nope").State)
	})
}

func TestDropDefaultTTL(t *testing.T) {
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	lanceTable(t, s, "t", 0)
	m, err := ns.Drop(context.Background(), "t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(7*day/time.Millisecond), m.TTLMs)
}

func TestListStatesAndPlan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		now := c.Now()
		for _, n := range []string{"live", "due", "notdue", "bad", "future", "neg", "foo.deleted", "foo"} {
			lanceTable(t, s, n, 1)
		}
		put := func(k, v string) {
			_, err := s.Put(ctx, k, []byte(v))
			require.NoError(t, err)
		}
		_, err := ns.Drop(ctx, "due", time.Hour)
		require.NoError(t, err)
		_, err = ns.Drop(ctx, "notdue", 30*day)
		require.NoError(t, err)
		_, err = ns.Drop(ctx, "foo.deleted", time.Hour)
		require.NoError(t, err)
		put("bad.deleted", "garbage{")
		put("neg.deleted", `{"deleted_at_ms":-5,"ttl_ms":1}`)
		put("future.deleted", string(EncodeMarker(now.Add(48*time.Hour), 0)))
		put("gone.deleted", string(EncodeMarker(now.Add(-time.Minute), time.Hour)))
		put("__manifest/data/x.lance", "v2 catalog")
		put("README.txt", "not a table")

		all, err := ns.List(ctx)
		require.NoError(t, err)
		got := map[string]State{}
		for _, st := range all {
			got[st.Name] = st.State
		}
		require.Equal(t, map[string]State{
			"live": StateExists, "due": StateSoftDeleted, "notdue": StateSoftDeleted,
			"bad": StateInvalidMarker, "neg": StateInvalidMarker, "future": StateSoftDeleted,
			"gone": StateOrphanMarker, "foo.deleted": StateSoftDeleted, "foo": StateExists,
		}, got)

		c.Advance(2 * time.Hour)
		p, err := ns.PlanPurge(ctx, c.Now())
		require.NoError(t, err)
		// Oldest purge_after first; "gone" claims an earlier deleted_at but
		// was stored last, so where the store's clock resolves it (not S3's
		// whole seconds) it comes last.
		require.ElementsMatch(t, []string{"gone", "due", "foo.deleted"}, names(p.Due))
		for i := 1; i < len(p.Due); i++ {
			require.False(t, p.Due[i].PurgeAfter.Before(p.Due[i-1].PurgeAfter), "oldest purge_after first")
		}
		require.Equal(t, []string{"notdue"}, names(p.NotDue))
		require.Equal(t, []string{"bad", "future", "neg"}, names(p.Invalid))
		for _, st := range p.Invalid {
			require.NotEmpty(t, st.Problem, st.Name)
		}
		due, err := ns.ListPurgeable(ctx, c.Now())
		require.NoError(t, err)
		require.Equal(t, names(p.Due), names(due))
	})
}

// One marker or hold that cannot be read makes that table unreadable (in
// the plan's Invalid: never purged), not the whole root's plan fail; a
// cancelled read still fails the plan.
func TestUnreadableMarkerFailsOnlyItsTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		denied := errors.New("api error AccessDenied: Access Denied")
		g := &objstoretest.FailKeys{Store: s, Fail: map[string]error{}}
		ns := newNS(t, g, c)
		for _, n := range []string{"due", "denied", "held"} {
			lanceTable(t, s, n, 1)
			_, err := ns.Drop(ctx, n, time.Hour)
			require.NoError(t, err)
		}
		_, err := ns.PlaceHold(ctx, "held", "case 7")
		require.NoError(t, err)
		g.Fail[MarkerKey("denied")] = denied
		g.Fail[HoldKey("held")] = denied
		c.Advance(2 * time.Hour)

		p, err := ns.PlanPurge(ctx, c.Now())
		require.NoError(t, err)
		require.Equal(t, []string{"due"}, names(p.Due))
		require.Equal(t, []string{"denied", "held"}, names(p.Invalid))
		for _, st := range p.Invalid {
			require.Equal(t, StateUnreadable, st.State, st.Name)
			require.Contains(t, st.Problem, "AccessDenied", st.Name)
		}
		require.Contains(t, p.Invalid[0].Problem, "read marker denied.deleted")
		require.Contains(t, p.Invalid[1].Problem, "read hold held.reaper-hold")

		g.Fail[MarkerKey("denied")] = context.DeadlineExceeded
		_, err = ns.PlanPurge(ctx, c.Now())
		require.ErrorIs(t, err, context.DeadlineExceeded, "a pass out of time is not an unreadable table")
	})
}

func names(sts []TableStatus) []string {
	out := []string{}
	for _, s := range sts {
		out = append(out, s.Name)
	}
	return out
}

func TestPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		n := lanceTable(t, s, "a", 5)
		lanceTable(t, s, "a.b", 1) // shares a leading name with "a"
		lanceTable(t, s, "live", 1)
		lanceTable(t, s, "soon", 1)
		_, err := s.Put(ctx, "__manifest/x", []byte("catalog"))
		require.NoError(t, err)
		_, err = ns.Drop(ctx, "a", time.Hour)
		require.NoError(t, err)
		_, err = ns.Drop(ctx, "soon", 10*day)
		require.NoError(t, err)
		before := snapshot(t, s)

		_, err = ns.Purge(ctx, "a", PurgeOptions{})
		var nd *NotDueError
		require.ErrorAs(t, err, &nd, "not due yet")
		require.ErrorIs(t, err, ErrNotPurgeable)
		require.Equal(t, before, snapshot(t, s))

		c.Advance(time.Hour + time.Second)
		dry, err := ns.Purge(ctx, "a", PurgeOptions{DryRun: true})
		require.NoError(t, err)
		require.Equal(t, OutcomeDryRun, dry.Outcome)
		require.Equal(t, int64(n), dry.Objects)
		require.Equal(t, before, snapshot(t, s), "dry run deletes nothing and takes no lease")

		var progress int64
		res, err := ns.Purge(ctx, "a", PurgeOptions{Progress: func(o, _ int64) { progress = o }})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
		require.Equal(t, int64(n), res.Objects)
		require.Equal(t, dry.Bytes, res.Bytes)
		require.Equal(t, int64(n), progress)

		after := snapshot(t, s)
		for k, etag := range before {
			if strings.HasPrefix(k, "a.lance/") || k == "a.deleted" {
				require.NotContains(t, after, k)
				continue
			}
			require.Equal(t, etag, after[k], "untouched: %s", k)
		}
		require.Len(t, after, len(before)-n-1)
		require.Equal(t, StateNotFound, statusOf(t, ns, "a").State)

		_, err = ns.Purge(ctx, "live", PurgeOptions{})
		require.ErrorIs(t, err, ErrNotPurgeable)
		require.ErrorIs(t, err, ErrNotSoftDeleted)
		_, err = ns.Purge(ctx, "a", PurgeOptions{})
		require.ErrorIs(t, err, ErrNotFound)
		_, err = ns.Purge(ctx, "a/../live", PurgeOptions{})
		require.ErrorIs(t, err, ErrInvalidName)
		require.Equal(t, after, snapshot(t, s))
	})
}

func TestPurgeRefusesBadMarkers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		for name, marker := range map[string]string{
			"garbage":  "{{{",
			"negative": `{"deleted_at_ms":1000,"ttl_ms":-1}`,
			"future":   string(EncodeMarker(c.Now().Add(time.Hour), 0)),
		} {
			lanceTable(t, s, name, 1)
			_, err := s.Put(ctx, MarkerKey(name), []byte(marker))
			require.NoError(t, err)
		}
		before := snapshot(t, s)
		c.Advance(time.Minute) // the future marker stays future
		for name, want := range map[string]error{"garbage": ErrInvalidMarker, "negative": ErrInvalidMarker, "future": ErrNotPurgeable} {
			_, err := ns.Purge(ctx, name, PurgeOptions{})
			require.ErrorIs(t, err, want, name)
		}
		require.Equal(t, before, snapshot(t, s))
	})
}

func TestPurgeOrphanMarker(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		_, err := s.Put(ctx, "ghost.deleted", EncodeMarker(c.Now(), time.Minute))
		require.NoError(t, err)
		require.Equal(t, StateOrphanMarker, statusOf(t, ns, "ghost").State)
		c.Advance(time.Minute + time.Second)
		res, err := ns.Purge(ctx, "ghost", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomeOrphanMarker, res.Outcome)
		require.Zero(t, res.Objects)
		require.Empty(t, snapshot(t, s))
	})
}

// A marker dated an hour ago next to data written now: the identity fence
// sees objects newer than deleted_at + skew and refuses, touching nothing.
func TestPurgeConflictFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "t", 3)
		_, err := s.Put(ctx, "t.deleted", EncodeMarker(c.Now().Add(-time.Hour), 0))
		require.NoError(t, err)
		before := snapshot(t, s)
		for _, dry := range []bool{true, false} {
			_, err = ns.Purge(ctx, "t", PurgeOptions{DryRun: dry})
			var ce *ConflictError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, ErrConflict)
			require.Equal(t, "t", ce.Name)
			require.True(t, strings.HasPrefix(err.Error(), "conflict"), err.Error())
			require.Equal(t, before, snapshot(t, s))
		}
	})
}

func TestPurgeOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		rec := &recorder{Store: s}
		ns := newNSBatch(t, rec, c, testBatch)
		n := lanceTable(t, s, "t", 250)
		_, err := ns.Drop(ctx, "t", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		rec.reset()
		res, err := ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(n), res.Objects)

		ops := rec.ops()
		require.Equal(t, "put-if-absent t.reaper-lock", ops[0], "lease first")
		require.Equal(t, "put-if-absent t.reaper-purge", ops[1], "the purge commits before its first delete")
		require.Equal(t, "delete-if-match t.reaper-lock", ops[len(ops)-1], "lease released last")
		require.Equal(t, "delete-if-match t.deleted", ops[len(ops)-2], "marker deleted last")
		require.Equal(t, "delete-if-match t.reaper-purge", ops[len(ops)-3], "the commit goes once the data is gone")
		// Every manifest goes before any other object.
		seenOther := false
		deleted := 0
		for _, op := range ops[2 : len(ops)-3] {
			key, ok := strings.CutPrefix(op, "delete ")
			if !ok {
				require.True(t, strings.HasPrefix(op, "put-if-match t.reaper-lock"), "only renewals besides deletes: %s", op)
				continue
			}
			deleted++
			if isManifest(strings.TrimPrefix(key, "t.lance/")) {
				require.False(t, seenOther, "manifest %s deleted after a data object", key)
			} else {
				seenOther = true
			}
		}
		require.Equal(t, n, deleted)
		require.LessOrEqual(t, rec.batches, 4, "260 objects: 1 manifest batch + 3 batches of <= 100")
	})
}

// A crash (here: an error) after the first delete batch leaves the marker;
// a re-run finishes the job.
func TestPurgeResumesAfterFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		n := lanceTable(t, s, "t", 150)
		lanceTable(t, s, "keep", 1)
		keep := keysUnder(snapshot(t, s), "keep.lance/")
		failing := &recorder{Store: s, failBatchAfter: 1}
		ns := newNSBatch(t, failing, c, testBatch)
		_, err := ns.Drop(ctx, "t", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		_, err = ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorContains(t, err, "injected")
		_, err = s.Head(ctx, "t.deleted")
		require.NoError(t, err, "marker survives a failed purge")
		st := statusOf(t, ns, "t")
		require.Equal(t, StatePartiallyPurged, st.State, "lease released, data partly left, the commit says so")
		require.ErrorIs(t, ns.Revive(ctx, "t"), ErrPartiallyPurged, "a partially purged table cannot be revived")

		ns2 := newNS(t, s, c)
		res, err := ns2.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Less(t, res.Objects, int64(n))
		snap := snapshot(t, s)
		require.Empty(t, keysUnder(snap, "t."))
		require.Equal(t, keep, keysUnder(snap, "keep.lance/"))
	})
}

func TestPurgeLockedByOther(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "t", 1)
		_, err := ns.Drop(ctx, "t", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		other := &lock.Locker{Store: s, Owner: "other-host/42", TTL: time.Hour, Logger: quiet()}
		lease, err := other.Acquire(ctx, LockKey("t"))
		require.NoError(t, err)
		defer lease.Release(ctx)
		require.Equal(t, StatePurging, statusOf(t, ns, "t").State)
		before := snapshot(t, s)
		res, err := ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrLocked)
		require.ErrorContains(t, err, "other-host/42")
		require.Equal(t, LeaseContended, res.Lease)
		require.Equal(t, before, snapshot(t, s))
		require.ErrorIs(t, ns.Revive(ctx, "t"), ErrLocked)

		// A lease write the store refuses is an error, not contention.
		lanceTable(t, s, "u", 1)
		_, err = ns.Drop(ctx, "u", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		denied := newNS(t, &objstoretest.FailKeys{Store: s, Fail: map[string]error{
			LockKey("u"): errors.New("api error AccessDenied: Access Denied"),
		}}, c)
		res, err = denied.Purge(ctx, "u", PurgeOptions{})
		require.ErrorContains(t, err, "AccessDenied")
		require.NotErrorIs(t, err, ErrLocked)
		require.Equal(t, LeaseError, res.Lease)
		res, err = ns.Purge(ctx, "u", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, LeaseAcquired, res.Lease)
	})
}

// The marker is rewritten between the first read and the lease: the re-read
// under the lease sees it and the purge touches nothing.
func TestPurgeMarkerChangedUnderLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		lanceTable(t, s, "t", 1)
		rec := &recorder{Store: s}
		ns := newNS(t, rec, c)
		_, err := ns.Drop(ctx, "t", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		rec.beforeLock = func() {
			// Revived and dropped again by another process.
			require.NoError(t, s.Delete(ctx, "t.deleted"))
			_, err := s.PutIfAbsent(ctx, "t.deleted", EncodeMarker(c.Now(), time.Hour))
			require.NoError(t, err)
		}
		_, err = ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrConflict)
		require.Len(t, keysUnder(snapshot(t, s), "t.lance/"), 8)
	})
}

func TestPurgeSpillsHugeTables(t *testing.T) {
	s := clockMemory()
	c := &clock{}
	ns := newNS(t, s, c)
	n := lanceTable(t, s, "big", spillInMemory+2345)
	_, err := ns.Drop(context.Background(), "big", time.Second)
	require.NoError(t, err)
	c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
	res, err := ns.Purge(context.Background(), "big", PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(n), res.Objects)
	require.Empty(t, snapshot(t, s))
}

// recorder wraps a store, records mutating calls and can inject faults.
type recorder struct {
	objstore.Store
	mu             sync.Mutex
	log            []string
	batches        int
	failBatchAfter int // fail DeleteBatch calls after this many (0 = never)
	beforeLock     func()
}

func (r *recorder) add(op string) {
	r.mu.Lock()
	r.log = append(r.log, op)
	r.mu.Unlock()
}

func (r *recorder) Unwrap() objstore.Store { return r.Store }

func (r *recorder) reset() {
	r.mu.Lock()
	r.log, r.batches = nil, 0
	r.mu.Unlock()
}

func (r *recorder) ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if strings.HasSuffix(key, LockSuffix) && r.beforeLock != nil {
		r.beforeLock()
	}
	r.add("put-if-absent " + key)
	return r.Store.PutIfAbsent(ctx, key, body)
}

func (r *recorder) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	r.add("put-if-match " + key)
	return r.Store.PutIfMatch(ctx, key, body, etag)
}

func (r *recorder) DeleteIfMatch(ctx context.Context, key, etag string) error {
	r.add("delete-if-match " + key)
	return r.Store.DeleteIfMatch(ctx, key, etag)
}

func (r *recorder) Delete(ctx context.Context, key string) error {
	r.add("delete-one " + key)
	return r.Store.Delete(ctx, key)
}

func (r *recorder) DeleteBatch(ctx context.Context, keys []string) error {
	r.mu.Lock()
	r.batches++
	fail := r.failBatchAfter > 0 && r.batches > r.failBatchAfter
	r.mu.Unlock()
	if fail {
		return errors.New("injected batch failure")
	}
	for _, k := range keys {
		r.add("delete " + k)
	}
	return r.Store.DeleteBatch(ctx, keys)
}

// Dropped through reaper, then written by a process that ignores the lease
// (LanceDB reviving by overwrite) a few seconds later: the object is newer
// than the marker on the store's own clock, so the purge refuses it even
// though deleted_at + skew allowance has not passed yet.
func TestPurgeConflictAfterDropOnStoreClock(t *testing.T) {
	dir := t.TempDir()
	ls, err := local.Open(dir)
	require.NoError(t, err)
	s := objstoretest.NewClockStore(ls)
	ctx := context.Background()
	c := &clock{}
	ns := newNS(t, s, c)
	lanceTable(t, s, "t", 2)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "t.lance"), func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		return os.Chtimes(p, old, old)
	}))
	_, err = ns.Drop(ctx, "t", 0)
	require.NoError(t, err)
	// The writer's manifest lands 3 s after the marker.
	_, err = s.Put(ctx, "t.lance/_versions/4.manifest", []byte("revived"))
	require.NoError(t, err)
	later := time.Now().Add(3 * time.Second)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "t.lance/_versions/4.manifest"), later, later))

	c.Advance(8 * day)
	before := snapshot(t, s)
	_, err = ns.Purge(ctx, "t", PurgeOptions{})
	require.ErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "_versions/4.manifest")
	require.Equal(t, before, snapshot(t, s))
}

// A budget stops a purge with its marker in place; the next purge continues
// and, with deletes in flight concurrently, still deletes manifests first.
func TestPurgeBudgetContinuesNextTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		rec := &recorder{Store: s}
		ns := newNSBatch(t, rec, c, testBatch)
		n := lanceTable(t, s, "big", 130)
		_, err := ns.Drop(ctx, "big", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		opts := PurgeOptions{MaxObjects: 50, DeleteConcurrency: 3}
		res, err := ns.Purge(ctx, "big", opts)
		require.NoError(t, err)
		require.Equal(t, OutcomePartial, res.Outcome)
		require.Less(t, res.Objects, int64(n))
		require.GreaterOrEqual(t, res.Objects, int64(50))
		require.Equal(t, StatePartiallyPurged, statusOf(t, ns, "big").State, "marker and commit kept, lease released")
		require.ErrorIs(t, ns.Revive(ctx, "big"), ErrPartiallyPurged, "a table stopped inside its manifests cannot be revived at an old version")
		for _, op := range rec.ops()[:4] {
			if k, ok := strings.CutPrefix(op, "delete "); ok {
				require.True(t, isManifest(strings.TrimPrefix(k, "big.lance/")), "first deletes are manifests: %s", k)
			}
		}
		total := res.Objects
		for i := 0; i < 5 && res.Outcome != OutcomePurged; i++ {
			res, err = ns.Purge(ctx, "big", opts)
			require.NoError(t, err)
			total += res.Objects
		}
		require.Equal(t, OutcomePurged, res.Outcome)
		require.Equal(t, int64(n), total)
		require.Empty(t, snapshot(t, s))
	})
}

// A purge handed the plan's marker skips its first read, and still sees a
// marker rewritten since the plan.
func TestPurgeWithPlannedMarker(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "a", 1)
		lanceTable(t, s, "b", 1)
		for _, n := range []string{"a", "b"} {
			_, err := ns.Drop(ctx, n, time.Second)
			require.NoError(t, err)
		}
		c.Advance(time.Minute)
		p, err := ns.PlanPurge(ctx, c.Now())
		require.NoError(t, err)
		require.Len(t, p.Due, 2)
		require.NotEmpty(t, p.Due[0].MarkerETag)

		// b is revived and dropped again after the plan.
		require.NoError(t, ns.Revive(ctx, "b"))
		c.Advance(2 * time.Second) // the TTL, and S3's second of resolution
		_, err = s.PutIfAbsent(ctx, MarkerKey("b"), EncodeMarker(c.Now().Add(-time.Hour), time.Second))
		require.NoError(t, err)

		for _, st := range p.Due {
			res, err := ns.Purge(ctx, st.Name, PurgeOptions{Planned: &st})
			if st.Name == "a" {
				require.NoError(t, err)
				require.Equal(t, OutcomePurged, res.Outcome)
			} else {
				require.ErrorIs(t, err, ErrConflict)
			}
		}
		require.Len(t, keysUnder(snapshot(t, s), "b.lance/"), 8)
	})
}

// New refuses options no purge could honour, naming the fix.
func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"negative default ttl", Options{DefaultTTL: -time.Hour}, "default ttl -1h0m0s is negative; pass a duration such as 168h"},
		{"negative skew", Options{SkewAllowance: -time.Minute}, "skew allowance -1m0s is negative; pass a duration such as 5m"},
		{"negative batch", Options{DeleteBatch: -1}, "delete batch of -1 keys: pass 1 to 1000, or 0 for 1000"},
		{"batch above the stores' limit", Options{DeleteBatch: 1001}, "delete batch of 1001 keys: pass 1 to 1000, or 0 for 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(memstore.New(), tc.opts)
			require.EqualError(t, err, tc.want)
		})
	}
	_, err := New(memstore.New(), Options{DeleteBatch: objstore.MaxBatchDelete})
	require.NoError(t, err, "the stores' limit itself is fine")
}
