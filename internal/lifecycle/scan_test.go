//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

// countingStore counts, at each marker read, how many names the root
// listing has handed out so far, how many reads have started, how many
// are in flight and how many goroutines the process runs: a scan that
// holds the root, or starts a goroutine per name, shows in these.
type countingStore struct {
	objstore.Store
	mu                   sync.Mutex
	listed               map[string]bool
	reads, inFlight      int
	maxInFlight          int
	maxAhead, goroutines int
}

func newCountingStore(s objstore.Store) *countingStore {
	return &countingStore{Store: s, listed: map[string]bool{}}
}

func (c *countingStore) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	return c.Store.List(ctx, prefix, func(p objstore.Page) error {
		c.mu.Lock()
		for _, o := range p.Objects {
			if name, kind := classifyObject(o.Key); kind != entryOther {
				c.listed[name] = true
			}
		}
		for _, pre := range p.Prefixes {
			if name, kind := classifyPrefix(pre); kind != entryOther {
				c.listed[name] = true
			}
		}
		c.mu.Unlock()
		return fn(p)
	})
}

func (c *countingStore) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	c.mu.Lock()
	c.reads++
	c.inFlight++
	c.maxInFlight = max(c.maxInFlight, c.inFlight)
	c.maxAhead = max(c.maxAhead, len(c.listed)-c.reads)
	c.goroutines = max(c.goroutines, runtime.NumGoroutine())
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	return c.Store.Get(ctx, key, limit)
}

// TestScanBoundsConcurrencyAndWindow: a status of a root of thousands of
// soft-deleted tables reads their markers from a fixed pool, never a
// goroutine per name, and never holds more of the listing than its window:
// when each marker read starts, the listing has handed out at most the
// pool, the queue and a page of names beyond the reads started.
func TestScanBoundsConcurrencyAndWindow(t *testing.T) {
	const names, pageSize = 3000, 10
	dir := t.TempDir()
	base, err := local.Open(dir, local.WithPageSize(pageSize))
	require.NoError(t, err)
	ctx := context.Background()
	marker := EncodeMarker(time.Now(), 30*day)
	for i := range names {
		name := fmt.Sprintf("t%05d", i)
		_, err := base.Put(ctx, TableDir(name)+"_latest.manifest", []byte("x"))
		require.NoError(t, err)
		_, err = base.Put(ctx, MarkerKey(name), marker)
		require.NoError(t, err)
	}
	s := newCountingStore(base)
	ns, err := New(s, Options{Logger: quiet()})
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	n := 0
	require.NoError(t, ns.EachStatus(ctx, nil, func(st TableStatus, _ time.Time) error {
		require.Equal(t, StateSoftDeleted, st.State, st.Name)
		n++
		return nil
	}))
	require.Equal(t, names, n)
	require.Equal(t, names, s.reads, "one marker read per name")
	require.LessOrEqual(t, s.maxInFlight, DefaultMarkerReads, "reads in flight")
	require.LessOrEqual(t, s.goroutines-before, DefaultMarkerReads+4, "goroutines beside the test's (%d before the scan)", before)
	// A page of entries is pageSize/2 names (a table and its marker); the
	// window adds the name being handed over.
	require.LessOrEqual(t, s.maxAhead, scanAhead+DefaultMarkerReads+pageSize+1, "names listed and not yet read")
}

// scanRoot is a root written for the scan tests: which keys each name has.
type scanRoot map[string]rootEntry

// scanName is a random name built to collide with others in key order:
// bytes around '.' and '/', names that are the start of others, names
// ending in a layout suffix.
func scanName(r *rand.Rand) string {
	parts := []string{"a", "b", ".", "-", "+", "_", "0", "~", ".deleted", ".lance", ".reaper-hold", "a.b"}
	var b strings.Builder
	for range 1 + r.IntN(4) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// writeScanRoot writes n random names with random keys to s: data, a
// marker (due, not due or invalid), a lease (unreadable: not a lease's
// JSON), a legal hold, a purge commit (not a commit's JSON). On a local
// root a few names are a file where the table's directory belongs.
func writeScanRoot(t *testing.T, s objstore.Store, r *rand.Rand, n int, now time.Time, isLocal bool) scanRoot {
	t.Helper()
	ctx := context.Background()
	root := scanRoot{}
	for len(root) < n {
		name := scanName(r)
		if ValidateName(name) != nil || root[name].any() {
			continue
		}
		var e rootEntry
		for !e.any() {
			e = rootEntry{data: r.IntN(3) > 0, marker: r.IntN(3) > 0, lease: r.IntN(8) == 0, hold: r.IntN(8) == 0, commit: r.IntN(10) == 0}
			if isLocal && !e.data && r.IntN(10) == 0 {
				e.notTable = true
			}
		}
		put := func(key string, body []byte) {
			_, err := s.Put(ctx, key, body)
			require.NoError(t, err, key)
		}
		if e.data {
			put(TableDir(name)+"_latest.manifest", []byte("x"))
		}
		if e.notTable {
			put(tablePath(name), []byte("not a table"))
		}
		if e.marker {
			switch r.IntN(3) {
			case 0:
				put(MarkerKey(name), EncodeMarker(now.Add(-10*day), day))
			case 1:
				put(MarkerKey(name), EncodeMarker(now.Add(-day), 30*day))
			default:
				put(MarkerKey(name), []byte("not json"))
			}
		}
		if e.lease {
			put(LockKey(name), []byte("not a lease"))
		}
		if e.hold {
			put(HoldKey(name), []byte(`{"reason":"case 7","held_by":"test","held_at_ms":1}`))
		}
		if e.commit {
			put(CommitKey(name), []byte("not a commit"))
		}
		root[name] = e
	}
	return root
}

// referenceStatus is the status of a root computed the plain way, as it
// was before scans streamed: the whole listing first, then every name in
// name order, one at a time.
func referenceStatus(t *testing.T, ns *Namespace, only []string) ([]TableStatus, []string) {
	t.Helper()
	ctx := context.Background()
	l := NewListing("", 0)
	require.NoError(t, ns.store.List(ctx, "", func(p objstore.Page) error { l.Add(p); return nil }))
	now, err := ns.storeNow(ctx)
	require.NoError(t, err)
	names := slices.Collect(func(yield func(string) bool) {
		for n := range l.entries {
			if len(only) == 0 || slices.Contains(only, n) {
				if !yield(n) {
					return
				}
			}
		}
	})
	for _, n := range only {
		if l.entries[n] == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []TableStatus
	var leaseOnly []string
	for _, n := range names {
		e := l.entries[n]
		if e == nil {
			out = append(out, TableStatus{Name: n, State: StateNotFound})
			continue
		}
		if e.lease && !e.marker {
			leaseOnly = append(leaseOnly, n)
		}
		s, err := ns.describe(ctx, n, e, now)
		require.NoError(t, err)
		if s.State != StateNotFound || len(only) > 0 {
			out = append(out, s)
		}
	}
	return out, leaseOnly
}

// referencePlan classifies referenceStatus as a plan did before plans
// streamed.
func referencePlan(t *testing.T, ns *Namespace, now time.Time, names []string) Plan {
	t.Helper()
	all, leaseOnly := referenceStatus(t, ns, names)
	p := Plan{LeaseOnly: leaseOnly, Now: now}
	for _, s := range all {
		switch {
		case s.State == StateNotATable && s.MarkerETag == "":
		case s.State == StateInvalidMarker || s.State == StateUnreadable || s.State == StateNotATable || s.FutureDated,
			s.State == StateStuck && s.Marker == nil:
			p.Invalid = append(p.Invalid, s)
		case s.Marker == nil:
			if s.State == StateExists {
				p.Live = append(p.Live, s)
			}
			if len(names) > 0 {
				p.Unpurgeable = append(p.Unpurgeable, s)
			}
		case s.Hold != nil:
			p.Held = append(p.Held, s)
		case s.State == StatePurging:
			p.Busy = append(p.Busy, s)
		case s.Due(now):
			p.Due = append(p.Due, s)
		default:
			p.NotDue = append(p.NotDue, s)
		}
	}
	slices.SortStableFunc(p.Due, CompareDue)
	return p
}

// pagedStore opens a fresh root of b listing pageSize entries a page.
func pagedStore(t *testing.T, b objstoretest.Backend, pageSize int) objstore.Store {
	t.Helper()
	r := b.NewRoot(t)
	if r.Backend == objstoretest.Local.Name {
		s, err := local.Open(r.Dir, local.WithPageSize(pageSize))
		require.NoError(t, err)
		return s
	}
	s := r.Open(t)
	switch s := s.(type) {
	case *memstore.Store:
		s.PageSize = pageSize
	case *s3.Store:
		s.PageSize = int32(pageSize)
	case *gcs.Store:
		s.PageSize = pageSize
	case *azure.Store:
		s.PageSize = int32(pageSize)
	case *s3ddb.Store:
		s.PageSize = int32(pageSize)
	default:
		t.Fatalf("%T: no page size to set", s)
	}
	return s
}

// TestScanMatchesReference: on random roots whose names start one another
// and sort differently as keys ("a", "a-b", "a.b", "a.deleted"), listed
// one entry a page and in small pages, a status streams every name once,
// in name order, each with every key it has (complete), exactly as the
// whole listing described name by name; a plan streams the same lists as
// that status classified; and a status or plan of named tables likewise.
func TestScanMatchesReference(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		t.Parallel()
		seeds, names := 20, 60
		if b.Name != objstoretest.Memory.Name {
			seeds, names = 2, 25 // real servers: fewer, slower roots
		}
		for seed := range seeds {
			r := rand.New(rand.NewPCG(uint64(seed), 25))
			pageSize := []int{1, 2, 3, 7}[seed%4]
			s := pagedStore(t, b, pageSize)
			if m, ok := s.(*memstore.Store); ok {
				fixed := time.Now()
				m.Clock = func() time.Time { return fixed }
			}
			now, err := s.Now(context.Background())
			require.NoError(t, err)
			root := writeScanRoot(t, s, r, names, now, b.Name == objstoretest.Local.Name)
			ns, err := New(s, Options{Logger: quiet()})
			require.NoError(t, err)
			checkScan(t, ns, root, nil, fmt.Sprintf("%s seed %d page %d", b.Name, seed, pageSize))
			named := []string{"never-written"}
			if n := scanName(r); ValidateName(n) == nil {
				named = append(named, n)
			}
			for n := range root {
				if r.IntN(4) == 0 {
					named = append(named, n)
				}
			}
			checkScan(t, ns, root, named, fmt.Sprintf("%s seed %d page %d named", b.Name, seed, pageSize))
		}
	})
}

// checkScan compares a streamed status and plan of ns with the reference.
func checkScan(t *testing.T, ns *Namespace, root scanRoot, only []string, what string) {
	t.Helper()
	ctx := context.Background()
	want, _ := referenceStatus(t, ns, only)
	var got []TableStatus
	require.NoError(t, ns.EachStatus(ctx, only, func(s TableStatus, _ time.Time) error {
		got = append(got, s)
		return nil
	}), what)
	require.Equal(t, want, got, what)
	require.True(t, slices.IsSortedFunc(got, func(a, b TableStatus) int { return strings.Compare(a.Name, b.Name) }), "%s: name order", what)
	for _, s := range got {
		if e, ok := root[s.Name]; ok {
			require.Equal(t, e.data, s.HasData, "%s: %s has data", what, s.Name)
		}
	}
	if len(only) == 0 {
		var names []string
		for n, e := range root {
			// A hold or a lease alone is no table (status shows a name
			// by its data, marker, commit or link).
			if e.data || e.marker || e.commit || e.notTable {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		var gotNames []string
		for _, s := range got {
			gotNames = append(gotNames, s.Name)
		}
		require.Equal(t, names, gotNames, "%s: every name once", what)
	}
	plan, err := ns.PlanPurge(ctx, time.Time{}, only...)
	require.NoError(t, err, what)
	require.Equal(t, referencePlan(t, ns, plan.Now, only), plan, what)
}

// TestWindowReleasesInNameOrder walks a listing one key at a time through
// a name-order window: a name is released only once it has every key it
// will get, and in name order, though "a-b" and "a.b" list before "a".
func TestWindowReleasesInNameOrder(t *testing.T) {
	keys := []string{
		"a+.deleted", "a-b.deleted", "a-b.lance/", "a.b.deleted", "a.b.lance/", "a.deleted", "a.lance/",
		"a.reaper-lock", "a0.deleted", "ab.lance/", "b.reaper-purge",
	}
	require.True(t, slices.IsSorted(keys))
	final := map[string]rootEntry{}
	for _, k := range keys {
		name, kind := classifyObject(k)
		if strings.HasSuffix(k, "/") {
			name, kind = classifyPrefix(k)
		}
		e := final[name]
		e.set(kind)
		final[name] = e
	}
	for _, order := range []scanOrder{nameOrder, completionOrder} {
		w := newWindow(order, nil)
		var released []string
		at := map[string]int{} // the key index each name was released at
		i := 0
		collect := func(p *pendingName) error {
			require.Equal(t, final[p.name], p.entry, "%s released before its last key", p.name)
			released = append(released, p.name)
			at[p.name] = i
			return nil
		}
		for i = range keys {
			var pg objstore.Page
			if strings.HasSuffix(keys[i], "/") {
				pg.Prefixes = []string{keys[i]}
			} else {
				pg.Objects = []objstore.Object{{Key: keys[i]}}
			}
			require.NoError(t, w.add(pg))
			require.NoError(t, w.release(false, collect))
		}
		i = len(keys)
		require.NoError(t, w.release(true, collect))
		require.Zero(t, w.held())
		want := []string{"a", "a+", "a-b", "a.b", "a0", "ab", "b"}
		if order == nameOrder {
			require.Equal(t, want, released)
			// "a" may get keys up to a.reaper-purge: until the listing
			// passes it (at a0.deleted), nothing after "a" is released.
			for _, n := range []string{"a", "a+", "a-b", "a.b"} {
				require.Equal(t, slices.Index(keys, "a0.deleted"), at[n], "%s released at key %d", n, at[n])
			}
		} else {
			require.ElementsMatch(t, want, released)
			// A name is released as soon as it is complete: "a-b" and
			// "a.b" before "a".
			require.Less(t, at["a-b"], at["a"])
			require.Less(t, at["a.b"], at["a"])
		}
	}
}

func TestReleaseBound(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"ab", "ab.reaper-retain"},
		{"a.b", "a.reaper-retain"}, // a.deleted lists after a.b.*
		{"a-b", "a.reaper-retain"},
		{"a.b.c", "a.reaper-retain"},
		{"a.z", "a.z.reaper-retain"}, // "a.z." sorts after a's every key
		{".a", ".a.reaper-retain"},   // no shorter name: "" is none
	} {
		require.Equal(t, tc.want, releaseBound(tc.name), tc.name)
	}
}

// outOfOrder lists its store's root with its first two pages swapped.
type outOfOrder struct{ objstore.Store }

func (o outOfOrder) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	var pages []objstore.Page
	if err := o.Store.List(ctx, prefix, func(p objstore.Page) error { pages = append(pages, p); return nil }); err != nil {
		return err
	}
	pages[0], pages[1] = pages[1], pages[0]
	for _, p := range pages {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// TestScanRefusesListingOutOfOrder: completeness rests on the listing's
// key order, so a store that breaks it fails the scan instead of
// describing a name before all its keys are seen.
func TestScanRefusesListingOutOfOrder(t *testing.T) {
	m := memstore.New()
	m.PageSize = 2
	ctx := context.Background()
	for _, k := range []string{"a.deleted", "a.lance/x", "b.deleted", "b.lance/x"} {
		_, err := m.Put(ctx, k, []byte(`{"deleted_at_ms":1}`))
		require.NoError(t, err)
	}
	ns, err := New(outOfOrder{m}, Options{Logger: quiet()})
	require.NoError(t, err)
	_, err = ns.List(ctx)
	require.ErrorIs(t, err, errListOrder)
	require.ErrorContains(t, err, `listed after "b.lance/"`)
	_, err = ns.PlanPurge(ctx, time.Time{})
	require.ErrorIs(t, err, errListOrder)
}

// TestScanStopsOnCallerError: an error from the caller's function ends the
// scan (the listing included) and is what the scan returns.
func TestScanStopsOnCallerError(t *testing.T) {
	m := memstore.New()
	m.PageSize = 1
	ctx := context.Background()
	for i := range 200 {
		_, err := m.Put(ctx, MarkerKey(fmt.Sprintf("t%03d", i)), EncodeMarker(time.Now(), day))
		require.NoError(t, err)
	}
	ns, err := New(m, Options{Logger: quiet()})
	require.NoError(t, err)
	stop := fmt.Errorf("enough")
	n := 0
	err = ns.EachStatus(ctx, nil, func(TableStatus, time.Time) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 3, n)
}

// TestPlanFromListing: a plan from a complete listing sends no listing of
// its own; one from a listing that outgrew its limit (Full, holding
// nothing) lists the root, and both plans are the same.
func TestPlanFromListing(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	fixed := time.Now()
	m.Clock = func() time.Time { return fixed }
	for _, k := range []string{"a.lance/x", "b.lance/x", "c.lance/x"} {
		_, err := m.Put(ctx, k, []byte("x"))
		require.NoError(t, err)
	}
	_, err := m.Put(ctx, MarkerKey("b"), EncodeMarker(fixed.Add(-10*day), day))
	require.NoError(t, err)
	s := &listCounter{Store: m}
	ns, err := New(s, Options{Logger: quiet()})
	require.NoError(t, err)
	fill := func(l *Listing) *Listing {
		require.NoError(t, m.List(ctx, "", func(p objstore.Page) error { l.Add(p); return nil }))
		return l
	}
	whole, full := fill(NewListing("", 3)), fill(NewListing("", 2))
	require.False(t, whole.Full())
	require.Equal(t, 3, whole.Len())
	require.True(t, full.Full())
	require.Zero(t, full.Len(), "a full listing holds nothing")

	fromWhole, err := ns.PlanPurgeFrom(ctx, whole, time.Time{})
	require.NoError(t, err)
	require.Zero(t, s.lists.Load(), "planned from the listing")
	fromFull, err := ns.PlanPurgeFrom(ctx, full, time.Time{})
	require.NoError(t, err)
	require.EqualValues(t, 1, s.lists.Load(), "a full listing: the root listed again")
	require.Equal(t, fromWhole, fromFull)
	require.Len(t, fromFull.NotDue, 1, "b: due by its deleted_at, not by its LastModified")
	require.Equal(t, "b", fromFull.NotDue[0].Name)
	require.Len(t, fromFull.Live, 2)
}
