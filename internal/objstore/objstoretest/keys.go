package objstoretest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var keyClauses = []clause{
	{"InvalidKeys", testInvalidKeys},
	{"InvalidPrefixes", testInvalidPrefixes},
	{"DottedKeys", testDottedKeys},
}

var invalidKeys = []string{"", "/abs", "a//b", "a/../b", "../a", "a/..", "./a", "a/./b", "a\x00b"}

func testInvalidKeys(t *testing.T, s objstore.Store, _ config) {
	ctx := t.Context()
	obj := put(t, s, "a/b", "v")
	for _, key := range invalidKeys {
		ops := map[string]func() error{
			"get":             func() error { _, _, err := s.Get(ctx, key, 1<<20); return err },
			"head":            func() error { _, err := s.Head(ctx, key); return err },
			"put":             func() error { _, err := s.Put(ctx, key, []byte("x")); return err },
			"put if absent":   func() error { _, err := s.PutIfAbsent(ctx, key, []byte("x")); return err },
			"put if match":    func() error { _, err := s.PutIfMatch(ctx, key, []byte("x"), obj.ETag); return err },
			"delete":          func() error { return s.Delete(ctx, key) },
			"delete if match": func() error { return s.DeleteIfMatch(ctx, key, obj.ETag) },
			"delete batch":    func() error { return s.DeleteBatch(ctx, []string{key}) },
		}
		for op, call := range ops {
			err := call()
			require.ErrorIs(t, err, objstore.ErrInvalidKey, "%s %q: got %v, want ErrInvalidKey", op, key, err)
		}
	}
	requireBody(t, s, "a/b", "v")
	all, _ := walkAll(t, s, "")
	require.Equal(t, []string{"a/b"}, keysOf(all), "keys after invalid writes: got/want")
}

func testInvalidPrefixes(t *testing.T, s objstore.Store, _ config) {
	for _, prefix := range []string{"/abs/", "a//", "a/../", "../", "./"} {
		err := s.List(t.Context(), prefix, func(objstore.Page) error { return nil })
		require.ErrorIs(t, err, objstore.ErrInvalidKey, "list %q: got %v, want ErrInvalidKey", prefix, err)
		err = s.Walk(t.Context(), prefix, func([]objstore.Object) error { return nil })
		require.ErrorIs(t, err, objstore.ErrInvalidKey, "walk %q: got %v, want ErrInvalidKey", prefix, err)
	}
}

// testDottedKeys covers the key shapes Lance and reaper write: dots inside
// segments, repeated suffixes, leading underscores.
func testDottedKeys(t *testing.T, s objstore.Store, _ config) {
	keys := []string{
		"foo.bar.lance/_versions/1.manifest",
		"foo.bar.lance/_latest.manifest",
		"foo.bar.lance/data/0a1b.lance",
		"x.deleted.deleted",
		"x.deleted",
		".hidden/.file",
		"..x/y..",
	}
	for _, k := range keys {
		put(t, s, k, k)
		requireBody(t, s, k, k)
	}
	objs, prefixes, _ := listAll(t, s, "")
	require.Equal(t, []string{"x.deleted", "x.deleted.deleted"}, keysOf(objs), "root objects: got/want")
	require.Equal(t, []string{"..x/", ".hidden/", "foo.bar.lance/"}, prefixes, "root prefixes: got/want")

	objs, prefixes, _ = listAll(t, s, "foo.bar.lance/")
	require.Equal(t, []string{"foo.bar.lance/_latest.manifest"}, keysOf(objs), "objects under foo.bar.lance/: got/want")
	require.Equal(t, []string{"foo.bar.lance/_versions/", "foo.bar.lance/data/"}, prefixes, "prefixes under foo.bar.lance/: got/want")

	for _, k := range keys {
		require.NoError(t, s.Delete(t.Context(), k), "delete %s", k)
		requireMissing(t, s, k)
	}
	left, _ := walkAll(t, s, "")
	require.Empty(t, left, "keys after deleting all")
}
