//go:build !fuzzonly

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// A file system mounted inside a dropped table (a bind mount of another
// tree, or a volume, under data/) is not the table's: the purge refuses
// the table before its commit, naming the mount point, and deletes
// nothing, neither of the table nor of the mounted tree (which it used to
// empty, then fail on the busy mount point after the commit, on every
// pass). A dry run refuses too. Real mounts, in a private mount namespace.
func TestAdversaryMountInsideATable(t *testing.T) {
	if !objstoretest.InMountNamespace(t) {
		return
	}
	for _, kind := range []string{"bind", "tmpfs"} {
		t.Run(kind, func(t *testing.T) {
			w, dir := localWorld(t)
			ctx := context.Background()
			p := w.proc("purger", 0)
			lanceTable(t, w.store, "t", 3)
			vol := filepath.Join(dir, "t.lance", "data", "vol")
			require.NoError(t, os.Mkdir(vol, 0o755))
			mounted := vol
			if kind == "bind" {
				mounted = t.TempDir()
				require.NoError(t, unix.Mount(mounted, vol, "", unix.MS_BIND, ""))
			} else {
				require.NoError(t, unix.Mount("reaper-test", vol, "tmpfs", 0, "size=1m"))
			}
			t.Cleanup(func() { require.NoError(t, unix.Unmount(vol, unix.MNT_DETACH)) })
			precious := map[string]string{"x.lance": "another file system's", "sub/y.lance": "deeper"}
			writeFiles(t, mounted, precious)
			_, err := p.ns.Drop(ctx, "t", time.Hour)
			require.NoError(t, err)
			w.advance(time.Hour + time.Second)
			before := ownFiles(t, filepath.Join(dir, "t.lance"), vol)

			_, dryErr := p.ns.Purge(ctx, "t", PurgeOptions{DryRun: true})
			_, err = p.ns.Purge(ctx, "t", PurgeOptions{})

			requireFiles(t, mounted, precious)
			require.ErrorIs(t, err, objstore.ErrMountPoint)
			require.ErrorContains(t, err, "t.lance/data/vol/")
			require.ErrorIs(t, dryErr, objstore.ErrMountPoint, "a dry run refuses too")
			_, err = w.store.Head(ctx, CommitKey("t"))
			require.ErrorIs(t, err, objstore.ErrNotFound, "refused before its commit")
			require.Equal(t, StateSoftDeleted, statusOf(t, p.ns, "t").State)
			require.Equal(t, before, ownFiles(t, filepath.Join(dir, "t.lance"), vol), "the table's own files")
		})
	}
}

// ownFiles reads the files under dir, but not under the mount point skip.
func ownFiles(t *testing.T, dir, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == skip:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		body, err := os.ReadFile(p)
		out[p] = string(body)
		return err
	}))
	require.NotEmpty(t, out)
	return out
}
