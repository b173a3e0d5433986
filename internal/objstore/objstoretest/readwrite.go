package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var readWriteClauses = []clause{
	{"GetHeadMissing", testGetHeadMissing},
	{"GetReturnsObject", testGetReturnsObject},
	{"GetLimit", testGetLimit},
	{"PutOverwrites", testPutOverwrites},
	{"PutCreatesParents", testPutCreatesParents},
	{"PutEmptyBody", testPutEmptyBody},
	{"PutAtomic", testPutAtomic},
	{"CancelledContext", testCancelledContext},
}

func testGetHeadMissing(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "file", "x")
	put(t, s, "dir/x", "x")
	for _, key := range []string{"missing", "missing/deeper", "file/child", "file.x", "dir", "di"} {
		_, _, err := s.Get(t.Context(), key, 1<<20)
		require.ErrorIs(t, err, objstore.ErrNotFound, "get %s: got %v, want ErrNotFound", key, err)
		getErr := err
		_, err = s.Head(t.Context(), key)
		require.ErrorIs(t, err, objstore.ErrNotFound, "head %s: got %v, want ErrNotFound", key, err)
		if key != "dir" {
			require.NotErrorIs(t, getErr, objstore.ErrIsFolder, "get %s is no folder", key)
			require.NotErrorIs(t, err, objstore.ErrIsFolder, "head %s is no folder", key)
		} else if errors.Is(getErr, objstore.ErrIsFolder) {
			require.ErrorIs(t, err, objstore.ErrIsFolder, "a store that tells Get a folder tells Head too")
		}
	}
}

func testGetReturnsObject(t *testing.T, s objstore.Store, _ config) {
	start := time.Now()
	body := "hello, reaper"
	putObj := put(t, s, "dir/obj", body)
	require.Equal(t, "dir/obj", putObj.Key, "put key: got/want")
	require.NotEmpty(t, putObj.ETag, "put ETag")
	require.Equal(t, int64(len(body)), putObj.Size, "put size: got/want")

	got := requireBody(t, s, "dir/obj", body)
	require.Equal(t, "dir/obj", got.Key, "get key: got/want")
	require.Equal(t, putObj.ETag, got.ETag, "get ETag: got/want (put)")
	require.Equal(t, int64(len(body)), got.Size, "get size: got/want")
	requireRecent(t, start, got.LastModified, "dir/obj")

	head, err := s.Head(t.Context(), "dir/obj")
	require.NoError(t, err, "head")
	require.Equal(t, got.ETag, head.ETag, "head ETag: got/want (get)")
	require.Equal(t, got.Size, head.Size, "head size: got/want (get)")
	require.Equal(t, "dir/obj", head.Key, "head key: got/want")
	requireRecent(t, start, head.LastModified, "dir/obj")
}

func testGetLimit(t *testing.T, s objstore.Store, _ config) {
	body := strings.Repeat("x", 100)
	put(t, s, "dir/big", body)
	got, _, err := s.Get(t.Context(), "dir/big", 100)
	require.NoError(t, err, "get at exactly its size")
	require.Equal(t, body, string(got))

	_, _, err = s.Get(t.Context(), "dir/big", 99)
	require.ErrorIs(t, err, objstore.ErrTooLarge, "get one byte over the limit")
	var tl *objstore.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, int64(99), tl.Limit)
	require.Contains(t, []int64{100, -1}, tl.Size, "the size, when the store said it")
	require.Contains(t, err.Error(), "dir/big", "the error names the key")

	for _, limit := range []int64{0, -1} {
		_, _, err = s.Get(t.Context(), "dir/big", limit)
		require.Error(t, err, "limit %d", limit)
		require.NotErrorIs(t, err, objstore.ErrTooLarge, "a bad limit is the caller's error, limit %d", limit)
		require.NotErrorIs(t, err, objstore.ErrNotFound, "limit %d", limit)
	}
}

func testPutOverwrites(t *testing.T, s objstore.Store, _ config) {
	// Identical bytes may keep the ETag (S3 derives it from the MD5), so
	// conditional writers put a nonce in every body; different bytes never do.
	put(t, s, "k", "same")
	second := put(t, s, "k", "same")
	requireBody(t, s, "k", "same")
	third := put(t, s, "k", "different")
	require.NotEqual(t, second.ETag, third.ETag, "ETag after overwrite")
	got := requireBody(t, s, "k", "different")
	require.Equal(t, third.ETag, got.ETag, "get ETag: got/want (last put)")
	require.Equal(t, int64(len("different")), got.Size, "size: got/want")
}

func testPutCreatesParents(t *testing.T, s objstore.Store, _ config) {
	key := "a/b/c/d/e.lance/_versions/1.manifest"
	put(t, s, key, "deep")
	requireBody(t, s, key, "deep")
	_, prefixes, _ := listAll(t, s, "a/b/")
	require.Equal(t, []string{"a/b/c/"}, prefixes, "prefixes under a/b/: got/want")
}

func testPutEmptyBody(t *testing.T, s objstore.Store, _ config) {
	obj := put(t, s, "empty", "")
	require.Equal(t, int64(0), obj.Size, "put size")
	got := requireBody(t, s, "empty", "")
	require.Equal(t, int64(0), got.Size, "get size")
}

// testPutAtomic overwrites one key while readers check that every read is
// exactly one of the written bodies, never a mix or a truncation.
func testPutAtomic(t *testing.T, s objstore.Store, _ config) {
	a := bytes.Repeat([]byte("a"), 64<<10)
	b := bytes.Repeat([]byte("b"), 32<<10)
	_, err := s.Put(t.Context(), "atomic", a)
	require.NoError(t, err, "put")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	bad := make(chan string, 3)
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				got, _, err := s.Get(ctx, "atomic", 1<<20)
				if err != nil {
					if ctx.Err() == nil {
						bad <- "get: " + err.Error()
					}
					return
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					bad <- "read a mix or truncation of the written bodies"
					return
				}
			}
		})
	}
	for i := range 10 {
		body := a
		if i%2 == 0 {
			body = b
		}
		_, err := s.Put(t.Context(), "atomic", body)
		require.NoError(t, err, "put %d", i)
	}
	cancel()
	wg.Wait()
	close(bad)
	for msg := range bad {
		t.Fatal(msg)
	}
}

// testCancelledContext checks that no operation runs on a cancelled context:
// wrappers rely on it to stop retrying cancelled work.
func testCancelledContext(t *testing.T, s objstore.Store, _ config) {
	obj := put(t, s, "k", "v")
	ctx := cancelled()
	check := func(op string, err error) {
		t.Helper()
		require.ErrorIs(t, err, context.Canceled, "%s on cancelled context: got %v", op, err)
	}
	_, _, err := s.Get(ctx, "k", 1<<20)
	check("get", err)
	_, err = s.Head(ctx, "k")
	check("head", err)
	_, err = s.Put(ctx, "k2", []byte("x"))
	check("put", err)
	_, err = s.PutIfAbsent(ctx, "k3", []byte("x"))
	check("put if absent", err)
	_, err = s.PutIfMatch(ctx, "k", []byte("x"), obj.ETag)
	check("put if match", err)
	check("delete", s.Delete(ctx, "k"))
	check("delete if match", s.DeleteIfMatch(ctx, "k", obj.ETag))
	check("delete batch", s.DeleteBatch(ctx, []string{"k"}))

	requireBody(t, s, "k", "v")
	requireMissing(t, s, "k2")
	requireMissing(t, s, "k3")
}
