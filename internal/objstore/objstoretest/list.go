package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var listClauses = []clause{
	{"ListOneLevel", testListOneLevel},
	{"ListSorted", testListSorted},
	{"ListEntriesHaveMetadata", testListMetadata},
	{"ListMissingPrefix", testListMissingPrefix},
	{"ListStopsOnError", testListStopsOnError},
	{"WalkRecursiveSorted", testWalkRecursiveSorted},
	{"WalkStopsOnError", testWalkStopsOnError},
	{"Paging", testPaging},
	{"PagingKeyOrder", testPagingKeyOrder},
	{"SameLeadingName", testSameLeadingName},
}

func testListOneLevel(t *testing.T, s objstore.Store, _ config) {
	putMany(t, s, []string{"b", "a/x", "a/b/c", "a/y/z", "a/y/w/v", "c/d"})

	objs, prefixes, _ := listAll(t, s, "")
	require.Equal(t, []string{"b"}, keysOf(objs), "objects under root: got/want")
	require.Equal(t, []string{"a/", "c/"}, prefixes, "prefixes under root: got/want")

	objs, prefixes, _ = listAll(t, s, "a/")
	require.Equal(t, []string{"a/x"}, keysOf(objs), "objects under a/: got/want")
	require.Equal(t, []string{"a/b/", "a/y/"}, prefixes, "prefixes under a/: got/want")

	objs, prefixes, _ = listAll(t, s, "a/y/w/")
	require.Equal(t, []string{"a/y/w/v"}, keysOf(objs), "objects under a/y/w/: got/want")
	require.Empty(t, prefixes, "prefixes under a/y/w/")
}

func testListSorted(t *testing.T, s objstore.Store, _ config) {
	// Written out of order, with bytes around '/' and '.' that trip naive
	// directory sorts. No key is both an object and a prefix: a filesystem
	// cannot hold both.
	keys := []string{"p/z", "p/a", "p/m", "p/B", "p/a-", "p/a.b", "p/a0", "p/_x", "p/a~", "p/A/1", "p/a1/1", "p/a.c/1"}
	putMany(t, s, keys)

	objs, prefixes, pages := listAll(t, s, "p/")
	got := keysOf(objs)
	require.True(t, slices.IsSorted(got), "objects not sorted: %v", got)
	require.True(t, slices.IsSorted(prefixes), "prefixes not sorted: %v", prefixes)
	require.Equal(t, []string{"p/B", "p/_x", "p/a", "p/a-", "p/a.b", "p/a0", "p/a~", "p/m", "p/z"}, got, "objects: got/want")
	require.Equal(t, []string{"p/A/", "p/a.c/", "p/a1/"}, prefixes, "prefixes: got/want")
	for i, p := range pages {
		require.True(t, slices.IsSortedFunc(p.Objects, func(a, b objstore.Object) int { return cmpKey(a.Key, b.Key) }), "page %d objects not sorted", i)
	}
}

func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testListMetadata(t *testing.T, s objstore.Store, _ config) {
	start := time.Now()
	put(t, s, "m/one", "12345")
	put(t, s, "m/two", "")

	objs, _, _ := listAll(t, s, "m/")
	require.Len(t, objs, 2, "objects under m/")
	wantSize := map[string]int64{"m/one": 5, "m/two": 0}
	for _, o := range objs {
		require.Equal(t, wantSize[o.Key], o.Size, "size of %s: got/want", o.Key)
		requireRecent(t, start, o.LastModified, o.Key)
		if o.ETag != "" { // listings may leave ETag empty, but never wrong
			head, err := s.Head(t.Context(), o.Key)
			require.NoError(t, err, "head %s", o.Key)
			require.Equal(t, head.ETag, o.ETag, "listed ETag of %s: got/want (head)", o.Key)
		}
	}
	walked, _ := walkAll(t, s, "m/")
	require.Equal(t, objs, walked, "walk entries: got/want (list)")
}

// requireRecent checks a LastModified against the test's wall clock, with
// room for a remote store's clock skew and coarse timestamps.
func requireRecent(t *testing.T, start, got time.Time, key string) {
	t.Helper()
	const skew = 5 * time.Minute
	require.False(t, got.IsZero(), "LastModified of %s is zero", key)
	require.True(t, got.After(start.Add(-skew)) && got.Before(time.Now().Add(skew)),
		"LastModified of %s: got %v, want within %v of [%v, now]", key, got, skew, start)
}

func testListMissingPrefix(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "exists/x", "x")
	for _, prefix := range []string{"missing/", "missing/deeper/", "exists/x/", "exists/nope/"} {
		objs, prefixes, _ := listAll(t, s, prefix)
		require.Empty(t, objs, "list %q objects", prefix)
		require.Empty(t, prefixes, "list %q prefixes", prefix)
		walked, _ := walkAll(t, s, prefix)
		require.Empty(t, walked, "walk %q", prefix)
	}
}

var errStop = errors.New("objstoretest: stop")

func testListStopsOnError(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "e/a", "a")
	put(t, s, "e/b/c", "c")
	calls := 0
	err := s.List(t.Context(), "e/", func(objstore.Page) error {
		calls++
		return errStop
	})
	require.Equal(t, errStop, err, "list error: got/want the callback's error unchanged")
	require.Equal(t, 1, calls, "callback calls after error")

	err = s.List(cancelled(), "e/", func(objstore.Page) error { return nil })
	require.ErrorIs(t, err, context.Canceled, "list on cancelled context")
}

func testWalkStopsOnError(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "e/a", "a")
	put(t, s, "e/b/c", "c")
	calls := 0
	err := s.Walk(t.Context(), "", func([]objstore.Object) error {
		calls++
		return errStop
	})
	require.Equal(t, errStop, err, "walk error: got/want the callback's error unchanged")
	require.Equal(t, 1, calls, "callback calls after error")

	err = s.Walk(cancelled(), "", func([]objstore.Object) error { return nil })
	require.ErrorIs(t, err, context.Canceled, "walk on cancelled context")
}

func testWalkRecursiveSorted(t *testing.T, s objstore.Store, _ config) {
	keys := []string{
		"t.lance/data/b.lance", "t.lance/data/a.lance", "t.lance/_versions/1.manifest",
		"t.lance/_versions/2.manifest", "t.lance.deleted", "t.lance-x/y", "t.lance0",
		"t.lance/_indices/i/part", "t/x", "u", "t.lance/z",
	}
	putMany(t, s, keys)
	want := slices.Clone(keys)
	slices.Sort(want)

	objs, _ := walkAll(t, s, "")
	require.Equal(t, want, keysOf(objs), "walk root: got/want")

	objs, _ = walkAll(t, s, "t.lance/")
	var under []string
	for _, k := range want {
		if len(k) > len("t.lance/") && k[:len("t.lance/")] == "t.lance/" {
			under = append(under, k)
		}
	}
	require.Equal(t, under, keysOf(objs), "walk t.lance/: got/want")

	objs, _ = walkAll(t, s, "t.lance/_versions/")
	require.Equal(t, []string{"t.lance/_versions/1.manifest", "t.lance/_versions/2.manifest"}, keysOf(objs), "walk t.lance/_versions/: got/want")
	for _, o := range objs {
		require.Equal(t, int64(len(o.Key)), o.Size, "walked size of %s: got/want", o.Key)
	}
}

func testPaging(t *testing.T, s objstore.Store, cfg config) {
	n := cfg.pageSize*2 + cfg.pageSize/2
	// Objects and sub-prefixes interleave so both count toward the page.
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("pg/%06d", i))
	}
	keys = append(keys, "pg/000100x/child", "pg/zz/child", "other")
	putMany(t, s, keys)

	t.Run("List", func(t *testing.T) {
		objs, prefixes, pages := listAll(t, s, "pg/")
		require.Len(t, objs, n, "objects listed")
		require.Equal(t, []string{"pg/000100x/", "pg/zz/"}, prefixes, "prefixes: got/want")
		require.GreaterOrEqual(t, len(pages), 3, "pages for %d entries at page size %d", n+2, cfg.pageSize)
		for i, p := range pages {
			require.LessOrEqual(t, len(p.Objects)+len(p.Prefixes), cfg.pageSize, "entries in page %d", i)
		}
		require.True(t, slices.IsSorted(keysOf(objs)), "objects across pages not sorted")
		require.Equal(t, keys[:n], keysOf(objs), "objects: got/want")
	})
	t.Run("Walk", func(t *testing.T) {
		objs, pages := walkAll(t, s, "pg/")
		want := slices.Clone(keys[:len(keys)-1])
		slices.Sort(want)
		require.Equal(t, want, keysOf(objs), "walked keys: got/want")
		require.GreaterOrEqual(t, len(pages), 3, "pages for %d objects at page size %d", len(want), cfg.pageSize)
		for i, p := range pages {
			require.NotEmpty(t, p, "page %d is empty", i)
			require.LessOrEqual(t, len(p), cfg.pageSize, "objects in page %d", i)
		}
	})
}

// testPagingKeyOrder: across pages, objects and prefixes together are in
// key order: every entry of a page sorts after every entry of the pages
// before it. A status streams a root and calls a name complete once the
// listing has passed its keys, which only this order allows.
func testPagingKeyOrder(t *testing.T, s objstore.Store, cfg config) {
	n := cfg.pageSize*2 + cfg.pageSize/2
	var keys []string
	for i := range n {
		if i%2 == 0 {
			keys = append(keys, fmt.Sprintf("ko/%06d.deleted", i))
		} else {
			keys = append(keys, fmt.Sprintf("ko/%06d.lance/x", i))
		}
	}
	putMany(t, s, keys)
	_, _, pages := listAll(t, s, "ko/")
	require.GreaterOrEqual(t, len(pages), 3, "pages for %d entries at page size %d", n, cfg.pageSize)
	last := ""
	for i, p := range pages {
		entries := slices.Clone(p.Prefixes)
		for _, o := range p.Objects {
			entries = append(entries, o.Key)
		}
		for _, k := range entries {
			require.Greater(t, k, last, "page %d: %q listed after %q", i, k, last)
		}
		last = slices.Max(entries)
	}
}

func testSameLeadingName(t *testing.T, s objstore.Store, _ config) {
	putMany(t, s, []string{"a.lance/x", "a.lance.deleted", "a.lance/y/z", "a.lance.deleted.deleted", "a.lancer"})

	objs, prefixes, _ := listAll(t, s, "")
	require.Equal(t, []string{"a.lance.deleted", "a.lance.deleted.deleted", "a.lancer"}, keysOf(objs), "objects: got/want")
	require.Equal(t, []string{"a.lance/"}, prefixes, "prefixes: got/want")

	objs, prefixes, _ = listAll(t, s, "a.lance/")
	require.Equal(t, []string{"a.lance/x"}, keysOf(objs), "objects under a.lance/: got/want")
	require.Equal(t, []string{"a.lance/y/"}, prefixes, "prefixes under a.lance/: got/want")

	walked, _ := walkAll(t, s, "")
	require.Equal(t, []string{"a.lance.deleted", "a.lance.deleted.deleted", "a.lance/x", "a.lance/y/z", "a.lancer"},
		keysOf(walked), "walk: got/want")
}
