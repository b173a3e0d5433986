//go:build !fuzzonly

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// movedRoot is a local root path that a test repoints mid-purge: opened
// names the directory the purge opened, now the one the path names after
// the move.
type movedRoot struct {
	path, opened, now string
	move              func(t *testing.T)
}

// movedRoots stage the two moves of a root path seen in the field: a
// release symlink flipped (current -> v1 becomes current -> v2) and a
// restore swapped in (mv db db.old; mv db.restored db).
var movedRoots = map[string]func(t *testing.T) *movedRoot{
	"symlink flip": func(t *testing.T) *movedRoot {
		base := t.TempDir()
		r := &movedRoot{path: filepath.Join(base, "current"), opened: filepath.Join(base, "v1"), now: filepath.Join(base, "v2")}
		require.NoError(t, os.Mkdir(r.opened, 0o755))
		require.NoError(t, os.Mkdir(r.now, 0o755))
		require.NoError(t, os.Symlink(r.opened, r.path))
		r.move = func(t *testing.T) {
			require.NoError(t, os.Symlink(r.now, r.path+".next"))
			require.NoError(t, os.Rename(r.path+".next", r.path))
		}
		return r
	},
	"directory swap": func(t *testing.T) *movedRoot {
		base := t.TempDir()
		r := &movedRoot{path: filepath.Join(base, "db"), opened: filepath.Join(base, "db"), now: filepath.Join(base, "db.restored")}
		require.NoError(t, os.Mkdir(r.opened, 0o755))
		require.NoError(t, os.Mkdir(r.now, 0o755))
		r.move = func(t *testing.T) {
			require.NoError(t, os.Rename(r.path, filepath.Join(base, "db.old")))
			require.NoError(t, os.Rename(r.now, r.path))
			r.opened, r.now = filepath.Join(base, "db.old"), r.path
		}
		return r
	},
}

// openDir opens a local store on dir as it is now.
func openDir(t *testing.T, dir string) objstore.Store {
	t.Helper()
	s, err := local.Open(dir)
	require.NoError(t, err)
	return s
}

// The root path of a purge is repointed between two of its delete batches
// to a directory holding a live table of the same name (the issue's
// reproduction lost 980 to 995 of its 1,001 files). The purge goes on
// only in the directory it opened: it fails naming the root change,
// nothing of the live table changes, and the table it had committed stays
// committed and finishable where it was; a purge of that directory
// finishes it, and a new pass over the path sees the live table, live.
func TestAdversaryRootMovedMidPurge(t *testing.T) {
	for how, setup := range movedRoots {
		t.Run(how, func(t *testing.T) {
			rootMovedMidPurge(t, setup, false)
		})
		// Frozen across the move for longer than its lease: the fence
		// refuses the next batch before the store sees the moved root, and
		// the failure must still name the move, not a bare lost lease.
		t.Run(how+", paused past the lease", func(t *testing.T) {
			rootMovedMidPurge(t, setup, true)
		})
	}
}

func rootMovedMidPurge(t *testing.T, setup func(t *testing.T) *movedRoot, pastLease bool) {
	r := setup(t)
	w := newWorld(t, objstoretest.NewClockStore(openDir(t, r.path)))
	p := w.proc("purger", 0)
	n := dueTable(t, w, p, "t", 350) // several batches of testBatch
	lanceTable(t, openDir(t, r.now), "t", 350)
	live := snapshot(t, openDir(t, r.now))

	frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
	r.move(t)
	if pastLease {
		w.advance(leaseGone)
	}
	got := frozen.resume()

	requireSameData(t, live, snapshot(t, openDir(t, r.now)), "the live table the root names now")
	require.ErrorIs(t, got.err, objstore.ErrRootChanged)
	require.ErrorContains(t, got.err, r.path)
	if pastLease {
		require.ErrorIs(t, got.err, lock.ErrLost)
	}
	require.True(t, got.res.Committed, "the purge had committed")
	require.Positive(t, got.res.Objects, "the manifests' batch went, in the directory opened")

	old := openDir(t, r.opened)
	_, err := old.Head(context.Background(), CommitKey("t"))
	require.NoError(t, err, "the commit stays where the purge wrote it")
	c := &clock{}
	finisher := newNS(t, objstoretest.NewClockStore(old), c)
	c.Advance(w.since() + leaseGone) // the lease the moved purge left may be taken over
	res, err := finisher.Purge(context.Background(), "t", PurgeOptions{})
	require.NoError(t, err, "a purge of the directory opened finishes the table")
	require.Equal(t, int64(n)-got.res.Objects, res.Objects)
	require.Empty(t, keysUnder(snapshot(t, old), "t."))

	next := newNS(t, objstoretest.NewClockStore(openDir(t, r.path)), &clock{})
	require.Equal(t, StateExists, statusOf(t, next, "t").State, "the next pass sees the live table")
	requireSameData(t, live, snapshot(t, openDir(t, r.now)), "the live table, at the end")
}
