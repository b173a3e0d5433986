package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// mount mounts source (a bind mount) or a fresh tmpfs (source "") on
// target, unmounted when the test ends (before its temp directories go).
func mount(t *testing.T, source, target string) {
	t.Helper()
	var err error
	if source == "" {
		err = unix.Mount("reaper-test", target, "tmpfs", 0, "size=1m")
	} else {
		err = unix.Mount(source, target, "", unix.MS_BIND, "")
	}
	require.NoError(t, err, "mount %q on %s", source, target)
	t.Cleanup(func() { require.NoError(t, unix.Unmount(target, unix.MNT_DETACH), "unmount %s", target) })
}

// mountCase is something mounted inside a table: at is the mount point
// (relative to the root), key the key a call must name in its refusal,
// outside the files of the mounted tree (relative to the mount point)
// that no call may change.
type mountCase struct {
	name    string
	bind    bool   // a bind mount of a tree outside the root (same device); else a tmpfs
	at, key string // the mount point and the key that names it
	file    bool   // a file bind-mounted over a file
	dirs    []string
	files   map[string]string
	// prune is the prefix pruned (default t.lance/); bare leaves data/
	// without a file of the table's own, so a prune would reach the mount.
	prune string
	bare  bool
}

var mountCases = []mountCase{
	{name: "tmpfs in data", at: "t.lance/data/vol", key: "t.lance/data/vol/",
		files: map[string]string{"x.lance": "on another file system", "sub/y.lance": "deeper"}},
	{name: "bind mount of the same device", bind: true, at: "t.lance/data/vol", key: "t.lance/data/vol/",
		files: map[string]string{"x.lance": "on the same device, another tree", "sub/y.lance": "deeper"}},
	{name: "empty directories bind-mounted", bind: true, at: "t.lance/data/vol", key: "t.lance/data/vol/",
		dirs: []string{"sub/deeper"}, prune: "t.lance/data/", bare: true},
	{name: "a file bind-mounted over a table file", bind: true, file: true, at: "t.lance/data/f.lance", key: "t.lance/data/f.lance"},
	{name: "the table directory is a mount", at: "t.lance", key: "t.lance/",
		files: map[string]string{"data/x.lance": "a whole volume"}},
}

// stage builds the root (a table t with a data file) and the mount; it
// returns the mounted tree's directory outside the root (the tmpfs itself
// for a tmpfs) and, for a bind-mounted file, the file.
func (mc mountCase) stage(t *testing.T, root string) (outside string) {
	t.Helper()
	writeFile(t, root, "t.lance/_versions/1.manifest", "m")
	if !mc.bare {
		writeFile(t, root, "t.lance/data/f.lance", "the table's own file")
	}
	target := filepath.Join(root, filepath.FromSlash(mc.at))
	switch {
	case mc.file:
		outside = writeFile(t, t.TempDir(), "precious", "a file of another tree")
		mount(t, outside, target)
		return outside
	case mc.bind:
		outside = t.TempDir()
		require.NoError(t, os.MkdirAll(target, 0o755))
		mount(t, outside, target)
	default:
		require.NoError(t, os.MkdirAll(target, 0o755))
		mount(t, "", target)
		outside = target
	}
	for _, d := range mc.dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(outside, d), 0o755))
	}
	for rel, body := range mc.files {
		writeFile(t, outside, rel, body)
	}
	return outside
}

// Something mounted inside a table is another file system: the walk
// refuses the table, naming the mount point (so a purge refuses before
// its commit), deletes and prunes never cross into it, and the mounted
// tree keeps every file and directory. Reads may cross (they delete
// nothing). Real mounts, in a private mount namespace.
func TestMountPoints(t *testing.T) {
	if !objstoretest.InMountNamespace(t) {
		return
	}
	for _, mc := range mountCases {
		t.Run(mc.name, func(t *testing.T) {
			root := t.TempDir()
			outside := mc.stage(t, root)
			before := tree(t, outside)
			s := open(t, root)
			ctx := t.Context()

			var keys []string
			for rel := range mc.files {
				keys = append(keys, mc.at+"/"+rel)
			}
			if mc.file {
				keys = append(keys, mc.at)
			}
			walkErr := s.Walk(ctx, "t.lance/", func([]objstore.Object) error { return nil })
			var getErr, deleteErr error
			if len(keys) > 0 {
				_, _, getErr = s.Get(ctx, keys[0], 1<<10)
				deleteErr = s.DeleteBatch(ctx, keys)
			}
			prefix := mc.prune
			if prefix == "" {
				prefix = "t.lance/"
			}
			pruneErr := s.PruneEmpty(ctx, prefix)

			require.Equal(t, before, tree(t, outside), "the mounted tree")
			if mc.file {
				requireContent(t, outside, "a file of another tree")
			}
			require.ErrorIs(t, walkErr, objstore.ErrMountPoint, "walk")
			require.ErrorContains(t, walkErr, mc.key, "walk: the error names the mount point")
			switch {
			case mc.file: // a file is never removed by a prune: it refuses the tree
				require.ErrorContains(t, pruneErr, "t.lance/data/f.lance is not a directory", "prune")
			case mc.bare || mc.prune != "":
				require.ErrorIs(t, pruneErr, objstore.ErrMountPoint, "prune")
			default:
				// The table's own file sits beside the mount: the prune
				// refuses at whichever the directory lists first (tmpfs
				// and ext4 list in different orders).
				if !errors.Is(pruneErr, objstore.ErrMountPoint) {
					require.ErrorContains(t, pruneErr, "t.lance/data/f.lance is not a directory", "prune")
				}
			}
			if len(keys) > 0 {
				require.NoError(t, getErr, "a read may cross a mount")
				require.ErrorIs(t, deleteErr, objstore.ErrMountPoint, "delete batch across the mount")
			}
			for rel, body := range mc.files {
				requireContent(t, filepath.Join(outside, filepath.FromSlash(rel)), body)
			}
		})
	}
}

// A mount placed after the walk (the purge's delete list already made)
// stops the deletes at it: nothing on the mounted file system goes, and
// the keys beside it on the root's own file system still do.
func TestMountPlacedAfterTheWalk(t *testing.T) {
	if !objstoretest.InMountNamespace(t) {
		return
	}
	root := t.TempDir()
	keys := []string{"t.lance/data/a.lance", "t.lance/data/vol/x.lance", "t.lance/data/vol/y.lance"}
	for _, k := range keys {
		writeFile(t, root, k, "the table's "+k)
	}
	s := open(t, root)
	require.Equal(t, keys, walkKeys(t, s, "t.lance/"))
	other := t.TempDir()
	writeFile(t, other, "x.lance", "another tree's file of the same name")
	mount(t, other, filepath.Join(root, "t.lance/data/vol"))

	err := s.DeleteBatch(t.Context(), keys)
	requireContent(t, filepath.Join(other, "x.lance"), "another tree's file of the same name")
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, objstore.ErrMountPoint)
	require.Len(t, be.Failed, 2, "the keys across the mount fail: %v", err)
	require.NoFileExists(t, filepath.Join(root, "t.lance/data/a.lance"), "the key on the root's file system went")
}
