package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// A root-level link to a directory outside the root, dressed as a dropped
// table (the security review's reproduction), and an alias link to a live
// table: both are objects, never entered, and nothing reaches through them.
func TestRootSymlinkIsNeverEntered(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := writeFile(t, outside, "f", "outside")
	deep := writeFile(t, outside, "sub/g", "outside too")
	require.NoError(t, os.Mkdir(filepath.Join(outside, "empty"), 0o755))
	symlink(t, outside, root, "evil.lance")
	symlink(t, filepath.Join(outside, "notyet"), root, "dangling.lance")
	writeFile(t, root, "evil.deleted", "{}")
	manifest := writeFile(t, root, "live.lance/_versions/1.manifest", "live")
	symlink(t, "live.lance", root, "alias.lance")
	before := tree(t, outside)
	s := open(t, root)
	ctx := t.Context()

	objs, prefixes := listKeys(t, s, "")
	require.Equal(t, []string{"alias.lance", "dangling.lance", "evil.deleted", "evil.lance"}, objs, "root objects: got/want")
	require.Equal(t, []string{"live.lance/"}, prefixes, "root prefixes: got/want")
	require.Equal(t, []string{"alias.lance", "dangling.lance", "evil.deleted", "evil.lance", "live.lance/_versions/1.manifest"},
		walkKeys(t, s, ""), "walk root: got/want")

	for _, prefix := range []string{"evil.lance/", "evil.lance/sub/", "alias.lance/", "alias.lance/_versions/", "dangling.lance/"} {
		require.Empty(t, walkKeys(t, s, prefix), "walk %q", prefix)
		objs, prefixes := listKeys(t, s, prefix)
		require.Empty(t, objs, "list %q objects", prefix)
		require.Empty(t, prefixes, "list %q prefixes", prefix)
		require.NoError(t, s.PruneEmpty(ctx, prefix), "prune %q", prefix)
	}

	for _, key := range []string{"evil.lance/f", "evil.lance/sub/g", "alias.lance/_versions/1.manifest"} {
		require.NoError(t, s.DeleteBatch(ctx, []string{key}), "delete batch %s", key)
		require.NoError(t, s.Delete(ctx, key), "delete %s", key)
		require.ErrorIs(t, s.DeleteIfMatch(ctx, key, "any"), objstore.ErrNotFound, "delete if match %s", key)
		_, _, err := s.Get(ctx, key, 1<<20)
		require.ErrorIs(t, err, objstore.ErrNotFound, "get %s", key)
		_, err = s.Head(ctx, key)
		require.ErrorIs(t, err, objstore.ErrNotFound, "head %s", key)
	}

	for _, key := range []string{"evil.lance/new", "evil.lance/sub/new", "evil.lance/newdir/new", "dangling.lance/new", "alias.lance/new"} {
		_, err := s.Put(ctx, key, []byte("x"))
		require.ErrorContains(t, err, "never writes through", "put %s", key)
		require.NotErrorIs(t, err, objstore.ErrNotFound, "put %s", key)
		_, err = s.PutIfAbsent(ctx, key, []byte("x"))
		require.ErrorContains(t, err, "never writes through", "put if absent %s", key)
		_, err = s.PutIfMatch(ctx, key, []byte("x"), "any")
		require.ErrorIs(t, err, objstore.ErrNotFound, "put if match %s", key)
	}

	require.Equal(t, before, tree(t, outside), "the outside directory is untouched")
	requireContent(t, secret, "outside")
	requireContent(t, deep, "outside too")
	requireContent(t, manifest, "live")
	require.NoFileExists(t, filepath.Join(outside, "notyet"), "nothing was created through the dangling link")

	// Deleting the key that is the link removes the link, not its target.
	require.NoError(t, s.DeleteBatch(ctx, []string{"evil.lance", "alias.lance"}))
	require.NoFileExists(t, filepath.Join(root, "evil.lance"))
	require.Equal(t, before, tree(t, outside), "the outside directory after deleting the link")
	requireContent(t, manifest, "live")
}

// Inside a table, a link to a file and a link to a directory outside the
// root are each one object: walked, not descended, and deleted as links.
func TestSymlinksInsideTableAreObjects(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := writeFile(t, outside, "file", "target")
	inDir := writeFile(t, outside, "dir/x", "x")
	writeFile(t, root, "t.lance/data/a.lance", "a")
	symlink(t, target, root, "t.lance/data/flink")
	symlink(t, filepath.Join(outside, "dir"), root, "t.lance/dlink")
	s := open(t, root)
	ctx := t.Context()

	objs := walkObjects(t, s, "t.lance/")
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	require.Equal(t, []string{"t.lance/data/a.lance", "t.lance/data/flink", "t.lance/dlink"}, keys, "walk: got/want")
	require.Equal(t, int64(len(target)), objs[1].Size, "a link's size is its own (the target path's length)")

	require.NoError(t, s.DeleteBatch(ctx, keys))
	requireContent(t, target, "target")
	requireContent(t, inDir, "x")
	require.NoDirExists(t, filepath.Join(root, "t.lance"), "the emptied table is pruned")
	require.DirExists(t, root)
}

// A directory component replaced by a link to the outside: Walk does not
// enter it, deletes and prunes through it do nothing.
func TestDirectoryReplacedBySymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	victim := writeFile(t, outside, "1.lance", "outside")
	require.NoError(t, os.Mkdir(filepath.Join(outside, "empty"), 0o755))
	writeFile(t, root, "t.lance/_versions/1.manifest", "m")
	symlink(t, outside, root, "t.lance/data")
	before := tree(t, outside)
	s := open(t, root)
	ctx := t.Context()

	require.Equal(t, []string{"t.lance/_versions/1.manifest", "t.lance/data"}, walkKeys(t, s, "t.lance/"), "walk: got/want")
	require.Empty(t, walkKeys(t, s, "t.lance/data/"), "walk through the link")
	require.NoError(t, s.DeleteBatch(ctx, []string{"t.lance/data/1.lance", "t.lance/data/empty"}))
	require.NoError(t, s.Delete(ctx, "t.lance/data/1.lance"))
	require.NoError(t, s.PruneEmpty(ctx, "t.lance/data/"))
	err := s.PruneEmpty(ctx, "t.lance/")
	require.ErrorIs(t, err, objstore.ErrNotEmpty, "prune a table holding a link and a file")
	require.DirExists(t, filepath.Join(root, "t.lance/_versions"))
	require.Equal(t, before, tree(t, outside), "the outside directory is untouched")
	requireContent(t, victim, "outside")
}

// Get of a marker that is a link fails closed: an error that is not
// ErrNotFound, and never the target's bytes. Head describes the link.
func TestGetSymlinkedMarker(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := writeFile(t, outside, "secret", "SECRET")
	writeFile(t, root, "real.deleted", "{}")
	symlink(t, target, root, "t.deleted")
	symlink(t, "real.deleted", root, "u.deleted")
	s := open(t, root)
	for _, key := range []string{"t.deleted", "u.deleted"} {
		body, obj, err := s.Get(t.Context(), key, 1<<20)
		require.Error(t, err, "get %s", key)
		require.NotErrorIs(t, err, objstore.ErrNotFound, "get %s: a link exists; callers must fail closed", key)
		require.ErrorContains(t, err, key+" is a symbolic link (or not a regular file); reaper never reads through it")
		require.Nil(t, body, "get %s returned bytes", key)
		require.Empty(t, obj.ETag, "get %s returned metadata", key)

		head, err := s.Head(t.Context(), key)
		require.NoError(t, err, "head %s", key)
		require.Equal(t, key, head.Key)
		fi, err := os.Lstat(filepath.Join(root, key))
		require.NoError(t, err)
		require.Equal(t, fi.Size(), head.Size, "head %s: the link's own size", key)
	}
}

// A fifo inside a table is an object: listed, walked, refused by Get
// without blocking, and deleted.
func TestFifoIsAnObject(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "t.lance/data/a.lance", "a")
	require.NoError(t, unix.Mkfifo(filepath.Join(root, "t.lance/data/p"), 0o644))
	s := open(t, root)
	ctx := t.Context()

	require.Equal(t, []string{"t.lance/data/a.lance", "t.lance/data/p"}, walkKeys(t, s, "t.lance/"))
	objs, _ := listKeys(t, s, "t.lance/data/")
	require.Equal(t, []string{"t.lance/data/a.lance", "t.lance/data/p"}, objs)
	_, _, err := s.Get(ctx, "t.lance/data/p", 1<<20)
	require.ErrorContains(t, err, "not a regular file")
	require.NotErrorIs(t, err, objstore.ErrNotFound)
	_, err = s.Head(ctx, "t.lance/data/p")
	require.NoError(t, err, "head of a fifo")
	require.NoError(t, s.DeleteBatch(ctx, []string{"t.lance/data/p"}))
	require.NoFileExists(t, filepath.Join(root, "t.lance/data/p"))
	require.Equal(t, []string{"t.lance/data/a.lance"}, walkKeys(t, s, "t.lance/"))
}

// A key whose path crosses a regular file behaves as a missing key for
// reads and deletes, and fails writes.
func TestKeyCrossingAFile(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	ctx := t.Context()
	_, err := s.Put(ctx, "file", []byte("f"))
	require.NoError(t, err)

	_, _, err = s.Get(ctx, "file/child", 1<<20)
	require.ErrorIs(t, err, objstore.ErrNotFound, "get")
	_, err = s.Head(ctx, "file/child")
	require.ErrorIs(t, err, objstore.ErrNotFound, "head")
	require.NoError(t, s.Delete(ctx, "file/child"), "delete")
	require.NoError(t, s.DeleteBatch(ctx, []string{"file/child", "file/a/b"}), "delete batch")
	require.ErrorIs(t, s.DeleteIfMatch(ctx, "file/child", "x"), objstore.ErrNotFound, "delete if match")
	require.NoError(t, s.PruneEmpty(ctx, "file/"), "prune")
	require.Empty(t, walkKeys(t, s, "file/"), "walk")
	for _, key := range []string{"file/child", "file/a/b"} {
		_, err = s.Put(ctx, key, []byte("x"))
		require.ErrorContains(t, err, "file/ is an object or a symbolic link, not a directory", "put %s", key)
		_, err = s.PutIfAbsent(ctx, key, []byte("x"))
		require.ErrorContains(t, err, "not a directory", "put if absent %s", key)
		_, err = s.PutIfMatch(ctx, key, []byte("x"), "x")
		require.ErrorIs(t, err, objstore.ErrNotFound, "put if match %s", key)
	}
	requireContent(t, filepath.Join(root, "file"), "f")
}
