//go:build !fuzzonly

package lifecycle

// Safety switches fail closed (issue 25, items 2 and 3): the PAUSE switch
// and the legal hold count as set in every form an operator can make them,
// and a switch that cannot be read is never read as off.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// A local root whose _reaper is not a directory of its own: a symbolic
// link to a switch folder shared by several roots (which a local root
// never follows), or a file. Before, the no-follow open of _reaper/ read
// as "no folder", so "not paused", and the purge ran while
// `ls root/_reaper/PAUSE` showed the switch.
func TestPauseFailsClosedThroughALinkOrAFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"link to a shared folder holding PAUSE", func(t *testing.T, root string) {
			shared := t.TempDir()
			writeFiles(t, shared, map[string]string{"PAUSE": "maintenance"})
			require.NoError(t, os.Symlink(shared, filepath.Join(root, pauseDir)))
		}},
		{"link to a folder without PAUSE", func(t *testing.T, root string) {
			require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, pauseDir)))
		}},
		{"a file", func(t *testing.T, root string) {
			writeFiles(t, root, map[string]string{pauseDir: ""})
		}},
		{"PAUSE a link", func(t *testing.T, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, pauseDir), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(root, PauseKey)))
		}},
		{"PAUSE an empty folder", func(t *testing.T, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, PauseKey), 0o755))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, root := localWorld(t)
			p := w.proc("purger", 0)
			dueTable(t, w, p, "t", 3)
			tc.setup(t, root)
			why, err := p.ns.Paused(context.Background())
			require.NoError(t, err)
			require.NotEmpty(t, why, "the switch reads as set")
			before := snapshot(t, w.store)
			_, err = p.ns.Purge(context.Background(), "t", PurgeOptions{})
			require.ErrorIs(t, err, ErrPaused)
			requireSameData(t, before, snapshot(t, w.store), "nothing deleted while paused")
		})
	}
	t.Run("an empty _reaper folder is off", func(t *testing.T) {
		w, root := localWorld(t)
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 3)
		require.NoError(t, os.MkdirAll(filepath.Join(root, pauseDir), 0o755))
		why, err := p.ns.Paused(context.Background())
		require.NoError(t, err)
		require.Empty(t, why)
		_, err = p.ns.Purge(context.Background(), "t", PurgeOptions{})
		require.NoError(t, err)
	})
}

// An object stored at _reaper itself (an `aws s3 cp PAUSE s3://b/db/_reaper`
// that forgot the switch's name) hides the switch on every backend: paused.
func TestPauseObjectAtTheSwitchFolder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 3)
		_, err := s.Put(context.Background(), pauseDir, []byte("pause"))
		require.NoError(t, err)
		why, err := p.ns.Paused(context.Background())
		require.NoError(t, err)
		require.Contains(t, why, "not a folder")
		_, err = p.ns.Purge(context.Background(), "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrPaused)
	})
}

// failHead fails Head of one key: a switch whose state cannot be read.
type failHead struct {
	objstore.Store
	key string
}

var errDenied = errors.New("access denied (injected)")

func (f failHead) Unwrap() objstore.Store { return f.Store }

func (f failHead) Head(ctx context.Context, key string) (objstore.Object, error) {
	if key == f.key {
		return objstore.Object{}, errDenied
	}
	return f.Store.Head(ctx, key)
}

func TestPauseUnreadableIsPaused(t *testing.T) {
	c := &clock{}
	mem := clockMemory()
	ns := newNS(t, failHead{Store: mem, key: pauseDir}, c)
	lanceTable(t, mem, "t", 3)
	_, err := ns.Drop(context.Background(), "t", 0)
	require.NoError(t, err)
	c.Advance(8 * day)
	_, err = ns.Paused(context.Background())
	require.ErrorIs(t, err, errDenied)
	_, err = ns.Purge(context.Background(), "t", PurgeOptions{})
	require.ErrorIs(t, err, ErrPaused, "an unreadable switch is treated as paused")
	require.Len(t, keysUnder(snapshot(t, mem), "t.lance/"), lanceTable(t, memstore.New(), "t", 3))
}

// holdForms are the folder forms of a legal hold an operator makes by hand;
// each returns false where the backend cannot hold it.
var holdForms = []struct {
	name string
	make func(ctx context.Context, s objstore.Store, name string) bool
}{
	{"folder with content", func(ctx context.Context, s objstore.Store, name string) bool {
		_, err := s.Put(ctx, HoldKey(name)+"/ticket.txt", []byte("case 9"))
		return err == nil
	}},
	{"console folder object", func(ctx context.Context, s objstore.Store, name string) bool {
		// S3, GCS and Azure consoles' "Create folder": an empty object
		// named with a trailing slash. Local and memory keys cannot end
		// in one; a local folder is TestHoldAsALocalDirectory.
		_, err := s.Put(ctx, HoldKey(name)+"/", nil)
		return !errors.Is(err, objstore.ErrInvalidKey)
	}},
}

// A legal hold in folder form holds on every backend: status shows it, the
// plan keeps the table, a purge refuses it, and release says to remove the
// folder by hand. Before, only the object <name>.reaper-hold was read, and
// the table was purged.
func TestHoldInFolderForm(t *testing.T) {
	for _, form := range holdForms {
		t.Run(form.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s objstore.Store) {
				ctx := context.Background()
				w := newWorld(t, s)
				p := w.proc("purger", 0)
				dueTable(t, w, p, "t", 3)
				if !form.make(ctx, w.store, "t") {
					return // not a form this backend can hold
				}
				requireFolderHeld(t, w, p, "t")
			})
		})
	}
}

// On a local disk, `mkdir <name>.reaper-hold` (empty) holds.
func TestHoldAsALocalDirectory(t *testing.T) {
	w, root := localWorld(t)
	p := w.proc("purger", 0)
	dueTable(t, w, p, "t", 3)
	require.NoError(t, os.Mkdir(filepath.Join(root, HoldKey("t")), 0o755))
	requireFolderHeld(t, w, p, "t")
}

func requireFolderHeld(t *testing.T, w *world, p *proc, name string) {
	t.Helper()
	ctx := context.Background()
	st := statusOf(t, p.ns, name)
	require.NotNil(t, st.Hold, "status shows the hold")
	require.True(t, st.Hold.Folder)
	require.Contains(t, st.Hold.Reason, HoldKey(name)+"/")
	plan, err := p.ns.PlanPurge(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []string{name}, names(plan.Held))
	before := snapshot(t, w.store)
	_, err = p.ns.Purge(ctx, name, PurgeOptions{})
	require.ErrorIs(t, err, ErrHeld)
	requireSameData(t, before, snapshot(t, w.store), "nothing deleted under a folder hold")
	_, err = p.ns.PlaceHold(ctx, name, "another")
	require.ErrorIs(t, err, ErrHeld, "a folder hold is a hold already")
	err = p.ns.ReleaseHold(ctx, name)
	require.Error(t, err)
	require.ErrorContains(t, err, "remove the folder")
}

// A hold folder made while the purge deletes stops it before its next
// batch, on every backend: the guard reads the folder form too.
func TestHoldFolderMidPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		purger := w.proc("purger", 0)
		n := dueTable(t, w, purger, "t", 250)
		frozen := purger.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		_, err := w.store.Put(context.Background(), HoldKey("t")+"/ticket.txt", []byte("case 10"))
		require.NoError(t, err)
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrHeld)
		require.Less(t, r.res.Objects, int64(n))
		st := statusOf(t, purger.ns, "t")
		require.Equal(t, StatePartiallyPurged, st.State)
		require.NotNil(t, st.Hold)
	})
}
