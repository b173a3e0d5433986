package objstoretest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var deleteClauses = []clause{
	{"DeleteRemoves", testDeleteRemoves},
	{"DeleteMissing", testDeleteMissing},
	{"DeleteIfMatchWrong", testDeleteIfMatchWrong},
	{"DeleteIfMatchRight", testDeleteIfMatchRight},
	{"DeleteIfMatchMissing", testDeleteIfMatchMissing},
	{"DeleteBatchTooMany", testDeleteBatchTooMany},
	{"DeleteBatchInvalidKeyAlone", testDeleteBatchInvalidKeyAlone},
	{"DeleteBatchMissingKeys", testDeleteBatchMissingKeys},
	{"DeleteBatchMax", testDeleteBatchMax},
}

func testDeleteRemoves(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "d/x", "x")
	put(t, s, "d/y", "y")
	require.NoError(t, s.Delete(t.Context(), "d/x"), "delete")
	requireMissing(t, s, "d/x")
	requireBody(t, s, "d/y", "y")
	require.NoError(t, s.Delete(t.Context(), "d/y"), "delete")
	objs, prefixes, _ := listAll(t, s, "")
	require.Empty(t, objs, "objects after deleting all")
	require.Empty(t, prefixes, "prefixes after deleting all")
}

func testDeleteMissing(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "file", "x")
	for _, key := range []string{"missing", "missing/deeper", "file/child"} {
		require.NoError(t, s.Delete(t.Context(), key), "delete missing %s", key)
	}
	requireBody(t, s, "file", "x")
}

func testDeleteIfMatchWrong(t *testing.T, s objstore.Store, _ config) {
	stale := put(t, s, "lease", "v1")
	cur := put(t, s, "lease", "v2")
	for _, etag := range []string{stale.ETag, "not-an-etag"} {
		err := s.DeleteIfMatch(t.Context(), "lease", etag)
		require.ErrorIs(t, err, objstore.ErrPrecondition, "delete if match with ETag %q: got %v, want ErrPrecondition", etag, err)
	}
	got := requireBody(t, s, "lease", "v2")
	require.Equal(t, cur.ETag, got.ETag, "ETag after losing delete if match: got/want")
}

func testDeleteIfMatchRight(t *testing.T, s objstore.Store, _ config) {
	cur := put(t, s, "lease/x", "v1")
	require.NoError(t, s.DeleteIfMatch(t.Context(), "lease/x", cur.ETag), "delete if match with the current ETag")
	requireMissing(t, s, "lease/x")
}

func testDeleteIfMatchMissing(t *testing.T, s objstore.Store, _ config) {
	old := put(t, s, "lease", "v1")
	require.NoError(t, s.Delete(t.Context(), "lease"), "delete")
	for _, key := range []string{"lease", "never/written"} {
		err := s.DeleteIfMatch(t.Context(), key, old.ETag)
		if err != nil {
			require.ErrorIs(t, err, objstore.ErrNotFound, "delete if match on missing %s: got %v, want ErrNotFound or nil", key, err)
		}
		_, err = s.Head(t.Context(), key)
		require.ErrorIs(t, err, objstore.ErrNotFound, "still missing: %s", key)
	}
}

func numberedKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return keys
}

func testDeleteBatchTooMany(t *testing.T, s objstore.Store, _ config) {
	keep := []string{"b/keep-0", "b/keep-1", "b/sub/keep-2"}
	putMany(t, s, keep)
	keys := append(numberedKeys("b/", objstore.MaxBatchDelete+1-len(keep)), keep...)
	require.Len(t, keys, objstore.MaxBatchDelete+1)

	err := s.DeleteBatch(t.Context(), keys)
	require.Error(t, err, "delete batch of %d keys", len(keys))
	for _, k := range keep {
		requireBody(t, s, k, k)
	}
}

// A key the grammar refuses fails alone, named in the batch's error; the
// other keys of the batch are deleted (one odd key in a table must not
// stop every batch that holds it).
func testDeleteBatchInvalidKeyAlone(t *testing.T, s objstore.Store, _ config) {
	keys := []string{"b/gone-0", "b/gone-1", "b/sub/gone-2"}
	putMany(t, s, keys)
	err := s.DeleteBatch(t.Context(), []string{keys[0], "a//b", keys[1], "../up", keys[2]})
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be, "delete batch with invalid keys: got %v", err)
	require.ErrorIs(t, err, objstore.ErrInvalidKey)
	var failed []string
	for _, f := range be.Failed {
		failed = append(failed, f.Key)
		require.ErrorIs(t, f.Err, objstore.ErrInvalidKey, f.Key)
	}
	require.ElementsMatch(t, []string{"a//b", "../up"}, failed)
	for _, k := range keys {
		_, err := s.Head(t.Context(), k)
		require.ErrorIs(t, err, objstore.ErrNotFound, "%s deleted beside the refused keys", k)
	}
}

func testDeleteBatchMissingKeys(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "b/x", "x")
	put(t, s, "file", "f")
	require.NoError(t, s.DeleteBatch(t.Context(), []string{"b/missing", "b/x", "nowhere/at/all", "file/child"}),
		"delete batch with missing keys")
	requireMissing(t, s, "b/x")
	requireBody(t, s, "file", "f")
	require.NoError(t, s.DeleteBatch(t.Context(), nil), "delete batch of no keys")
}

func testDeleteBatchMax(t *testing.T, s objstore.Store, _ config) {
	keys := append(numberedKeys("b/", objstore.MaxBatchDelete/2), numberedKeys("b/sub/", objstore.MaxBatchDelete/2)...)
	putMany(t, s, keys)
	put(t, s, "b/survivor", "s")
	require.NoError(t, s.DeleteBatch(t.Context(), keys), "delete batch of %d keys", len(keys))
	left, _ := walkAll(t, s, "")
	require.Equal(t, []string{"b/survivor"}, keysOf(left), "keys left after delete batch: got/want")
}
