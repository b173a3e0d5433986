//go:build !fuzzonly

package lifecycle

// The adversary's scenarios that only a local disk can stage: symbolic
// links, ctime, empty directories and temp files.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// localWorld is a world over a local root, with the root's directory.
func localWorld(t *testing.T) (*world, string) {
	dir := t.TempDir()
	ls, err := local.Open(dir)
	require.NoError(t, err)
	return newWorld(t, objstoretest.NewClockStore(ls)), dir
}

// writeFiles writes files (path relative to dir: body) and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// requireFiles checks that every file under dir still holds its body.
func requireFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		require.NoError(t, err, "%s must survive", rel)
		require.Equal(t, body, string(got), rel)
	}
}

// Scenario 4: evil.lance is a symlink to a directory outside the root, with
// a hand-written marker beside it. It is not a table: status says so, a
// pass's plan never purges it (not even as an orphan marker), a purge by
// name refuses, and nothing under the link's target is touched. An alias
// of a live table of the same root cannot be dropped or purged either.
func TestAdversarySymlinkedTable(t *testing.T) {
	w, dir := localWorld(t)
	ctx := context.Background()
	p := w.proc("purger", 0)
	outside := t.TempDir()
	precious := map[string]string{"a.txt": "keep", "deep/b.txt": "keep too", "_versions/1.manifest": "not ours"}
	writeFiles(t, outside, precious)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "evil.lance")))
	_, err := w.store.Put(ctx, MarkerKey("evil"), EncodeMarker(time.Now(), time.Millisecond))
	require.NoError(t, err)
	lanceTable(t, w.store, "live", 2)
	require.NoError(t, os.Symlink(filepath.Join(dir, "live.lance"), filepath.Join(dir, "alias.lance")))
	live := keysUnder(snapshot(t, w.store), "live.lance/")
	w.advance(time.Hour)

	st := statusOf(t, p.ns, "evil")
	require.Equal(t, StateNotATable, st.State)
	require.Contains(t, st.Problem, "evil.lance is not a directory")
	plan, err := p.ns.PlanPurge(ctx, time.Time{})
	require.NoError(t, err)
	require.Empty(t, plan.Due, "neither the link nor its marker is purgeable")
	require.Equal(t, []string{"evil"}, names(plan.Invalid), "a link with a marker is reported; a bare link is left alone")
	_, err = p.ns.Purge(ctx, "evil", PurgeOptions{})
	require.ErrorIs(t, err, ErrNotATable)
	_, err = p.ns.Purge(ctx, "evil", PurgeOptions{Planned: &st})
	require.Error(t, err, "even handed a plan")
	require.ErrorIs(t, p.ns.Revive(ctx, "evil"), ErrNotATable)
	_, err = p.ns.Drop(ctx, "alias", time.Hour)
	require.ErrorIs(t, err, ErrNotATable, "an alias of a live table is not a table")
	require.Equal(t, StateNotATable, statusOf(t, p.ns, "alias").State)
	_, err = p.ns.PlaceHold(ctx, "alias", "x")
	require.Error(t, err)

	requireFiles(t, outside, precious)
	require.Equal(t, live, keysUnder(snapshot(t, w.store), "live.lance/"))
	_, err = os.Lstat(filepath.Join(dir, "evil.lance"))
	require.NoError(t, err, "the link itself is left for an operator")
	require.Equal(t, StateExists, statusOf(t, p.ns, "live").State)
}

// Scenario 4, inside a table: a symlink in a dropped table (to a file and
// to a directory outside the root) is deleted as the link, never followed.
func TestAdversarySymlinkInsideATable(t *testing.T) {
	w, dir := localWorld(t)
	p := w.proc("purger", 0)
	outside := t.TempDir()
	precious := map[string]string{"secret.txt": "keep", "sub/x": "keep"}
	writeFiles(t, outside, precious)
	lanceTable(t, w.store, "t", 3)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "t.lance", "data", "escape")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "t.lance", "_versions", "9.manifest")))
	_, err := p.ns.Drop(context.Background(), "t", time.Hour)
	require.NoError(t, err)
	w.advance(time.Hour + time.Second)
	res, err := p.ns.Purge(context.Background(), "t", PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, OutcomePurged, res.Outcome)
	requireFiles(t, outside, precious)
	_, err = os.Lstat(filepath.Join(dir, "t.lance"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing of the table is left, links included")
}

// Scenario 8: a file copied into a dropped table with its old mtime kept
// (cp -p, rsync -a, mv of an old file) still shows when it arrived: the
// local fence uses the later of mtime and ctime, so the purge refuses.
func TestAdversaryCopiedFileKeepsItsMtime(t *testing.T) {
	w, dir := localWorld(t)
	ctx := context.Background()
	p := w.proc("purger", 0)
	lanceTable(t, w.store, "t", 3)
	// The dropper's clock put the drop an hour before the store stamped
	// the marker: the fence is deleted_at + skew, before now.
	_, err := w.store.PutIfAbsent(ctx, MarkerKey("t"), EncodeMarker(time.Now().Add(-time.Hour), time.Hour))
	require.NoError(t, err)
	copied := filepath.Join(dir, "t.lance", "_versions", "4.manifest")
	writeFiles(t, dir, map[string]string{"t.lance/_versions/4.manifest": "revived by copy"})
	old := time.Now().Add(-30 * day)
	require.NoError(t, os.Chtimes(copied, old, old)) // what cp -p does
	// Every other file predates the drop: their mtimes too.
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "t.lance"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == copied {
			return err
		}
		return os.Chtimes(path, old, old)
	}))
	w.advance(2 * time.Hour)
	before := snapshot(t, w.store)
	_, err = p.ns.Purge(ctx, "t", PurgeOptions{})
	require.ErrorIs(t, err, ErrConflict)
	requireSameData(t, before, snapshot(t, w.store), "nothing deleted")
}

// Scenario 10: a table that held empty directories and links leaves
// nothing behind; a purge killed between its last unlink and removing the
// directories is finished by the next pass, which removes them before the
// marker (LanceDB would list an empty <name>.lance/ as a table).
func TestAdversaryNothingLeftBehind(t *testing.T) {
	w, dir := localWorld(t)
	ctx := context.Background()
	p := w.proc("purger", 0)
	lanceTable(t, w.store, "t", 3)
	for _, d := range []string{"t.lance/_indices/empty-uuid", "t.lance/tree/branch/_versions", "t.lance/data/sub/deeper"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "t.lance", "dangling")))
	_, err := p.ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	w.advance(time.Hour + time.Second)

	// Killed after the last unlink, before the directories went.
	crashing := &failPrune{Store: p.pause}
	ns, err := New(crashing, p.ns.Options())
	require.NoError(t, err)
	_, err = ns.Purge(ctx, "t", PurgeOptions{})
	require.ErrorIs(t, err, errCrash)
	require.Empty(t, keysUnder(snapshot(t, w.store), "t.lance/"), "every object is gone")
	require.DirExists(t, filepath.Join(dir, "t.lance", "_indices", "empty-uuid"))
	st := statusOf(t, p.ns, "t")
	require.Equal(t, StatePartiallyPurged, st.State, "still listed, with its marker and commit")

	res, err := p.ns.Purge(ctx, "t", PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, OutcomeOrphanMarker, res.Outcome)
	_, err = os.Lstat(filepath.Join(dir, "t.lance"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Empty(t, keysUnder(snapshot(t, w.store), "t."))
	require.Equal(t, StateNotFound, statusOf(t, p.ns, "t").State)
}

var errCrash = errors.New("killed")

// failPrune fails PruneEmpty, as a process killed right before it would.
type failPrune struct{ objstore.Store }

func (f *failPrune) Unwrap() objstore.Store { return f.Store }

func (f *failPrune) PruneEmpty(context.Context, string) error { return errCrash }

// Scenario 11: read-only commands (status, a dry run, hold) never delete
// user files named like reaper's temp files, inside tables or at the root.
func TestAdversaryReadOnlyCommandsKeepUserFiles(t *testing.T) {
	w, dir := localWorld(t)
	ctx := context.Background()
	p := w.proc("reader", 0)
	lanceTable(t, w.store, "t", 2)
	lanceTable(t, w.store, "live", 2)
	user := map[string]string{
		"live.lance/data/.reaper-tmp-notes":                 "user data",
		"live.lance/.reaper-tmp-ABCDEFGHIJKLMNOPQRSTUVWXYZ": "user data named like ours",
		"t.lance/data/.reaper-tmp-ABCDEFGHIJKLMNOPQRSTUVWX": "user data",
		".reaper-tmp-notes":                                 "user data at the root",
	}
	writeFiles(t, dir, user)
	old := time.Now().Add(-48 * time.Hour)
	for rel := range user {
		require.NoError(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(rel)), old, old))
	}
	_, err := p.ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	w.advance(time.Hour + time.Second)

	_, err = p.ns.List(ctx)
	require.NoError(t, err)
	_, err = p.ns.Purge(ctx, "t", PurgeOptions{DryRun: true})
	require.NoError(t, err)
	_, err = p.ns.PlaceHold(ctx, "live", "case 1")
	require.NoError(t, err)
	_, err = p.ns.Status(ctx, "live", "t")
	require.NoError(t, err)
	requireFiles(t, dir, user)
}

// A marker with a TTL below any floor and no table beside it is an orphan
// marker, which the pass's rails let through. A table moved in after the
// plan (mv keeps its files' times, older than the drop, so the identity
// fence passes them) must not be purged under that judgement: the purge
// stops with a conflict, nothing deleted, and the next plan sees the data.
func TestAdversaryOrphanPlannedTableMovedIn(t *testing.T) {
	w, root := localWorld(t)
	ctx := context.Background()
	p := w.proc("purger", 0)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"t.lance/_versions/1.manifest": "m", "t.lance/data/a.lance": "a"})
	_, err := w.store.Put(ctx, MarkerKey("t"), EncodeMarker(time.Now(), time.Millisecond))
	require.NoError(t, err)
	w.advance(time.Second)
	plan, err := p.ns.PlanPurge(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, plan.Due, 1)
	require.Equal(t, StateOrphanMarker, plan.Due[0].State)

	require.NoError(t, os.Rename(filepath.Join(outside, "t.lance"), filepath.Join(root, "t.lance")))
	_, err = p.ns.Purge(ctx, "t", PurgeOptions{Planned: &plan.Due[0]})
	require.ErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "plans the table again")
	requireFiles(t, root, map[string]string{"t.lance/_versions/1.manifest": "m", "t.lance/data/a.lance": "a"})
	require.Equal(t, StateSoftDeleted, statusOf(t, p.ns, "t").State, "the next plan sees a table, not an orphan marker")
}
