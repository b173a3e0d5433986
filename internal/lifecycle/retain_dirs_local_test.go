//go:build !fuzzonly

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/retention"
)

// On a local disk a retention run leaves the directories as Lance's
// cleanup leaves them (cleanup.rs: cleanup_removes_preexisting_empty_index_directories,
// cleanup_applies_unverified_policy_to_fresh_empty_index_directory,
// cleanup_does_not_remove_empty_directory_through_index_symlink, and what
// the LanceDB 0.39 client does): the _indices/<uuid>/ directories its
// deletes emptied go, _indices/ itself and _deletions/ stay, even empty;
// with DeleteUnverified every empty directory below _indices/ that no
// standing version's index names goes too, also when nothing else is
// deleted; an index in use keeps its directory whole; a link is never
// followed.
func TestRetainDirectoriesAsLance(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (string, *Namespace, string, string) {
		root := t.TempDir()
		ls, err := local.Open(root)
		require.NoError(t, err)
		s := objstoretest.NewClockStore(ls)
		ns := newNS(t, s, &clock{})
		putLanceFixture(t, s, "t")
		dir := filepath.Join(root, TableDir("t"))
		outside := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(outside, "must_remain"), 0o755))
		for _, d := range []string{"stale", "stale2/empty_nested"} {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, lance.IndicesDir, d), 0o755))
		}
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, lance.IndicesDir, "link")))
		return dir, ns, outside, root
	}
	index := "_indices/2550c3b9-3346-4fff-9cd0-3ec8a8ddfcd9"
	requireLinkIntact := func(t *testing.T, dir, outside string) {
		fi, err := os.Lstat(filepath.Join(dir, lance.IndicesDir, "link"))
		require.NoError(t, err)
		require.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the link stays a link")
		require.DirExists(t, filepath.Join(outside, "must_remain"), "never through a link")
	}

	t.Run("the index directories a run empties go, _indices/ and _deletions/ stay", func(t *testing.T) {
		dir, ns, outside, root := setup(t)
		s := ns.store
		// Every version but the tagged 2 and the newest (a restore of 2, no
		// index, no deletion file) goes: the index and both deletion files.
		// The cutoff is after the store wrote the fixture.
		p := retention.Policy{Before: mustNow(t, s).Add(time.Second)}
		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: p})
		require.NoError(t, err)
		require.Equal(t, RetainCleaned, res.Outcome)
		require.NoDirExists(t, filepath.Join(dir, index), "emptied by the run")
		require.DirExists(t, filepath.Join(dir, "_indices"))
		require.DirExists(t, filepath.Join(dir, "_deletions"))
		entries, err := os.ReadDir(filepath.Join(dir, "_deletions"))
		require.NoError(t, err)
		require.Empty(t, entries, "every deletion file went")
		require.DirExists(t, filepath.Join(dir, "_indices", "stale"), "fresh, and no delete_unverified")
		require.DirExists(t, filepath.Join(dir, "_indices", "stale2", "empty_nested"))
		requireLinkIntact(t, dir, outside)
		require.DirExists(t, root)
	})

	t.Run("delete_unverified takes every other empty index directory", func(t *testing.T) {
		dir, ns, outside, _ := setup(t)
		require.NoError(t, os.Mkdir(filepath.Join(dir, index, "empty_nested"), 0o755))
		p := fixturePolicy(t, ns.store, "t") // version 5, kept, uses the index
		p.DeleteUnverified = true
		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: p})
		require.NoError(t, err)
		require.Equal(t, RetainCleaned, res.Outcome)
		require.NoDirExists(t, filepath.Join(dir, "_indices", "stale"))
		require.NoDirExists(t, filepath.Join(dir, "_indices", "stale2"))
		require.DirExists(t, filepath.Join(dir, index, "empty_nested"), "an index in use keeps its directory whole")
		require.DirExists(t, filepath.Join(dir, "_indices"))
		requireLinkIntact(t, dir, outside)

		// With nothing else to delete, as Lance's cleanup.
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "_indices", "fresh", "a"), 0o755))
		res, err = ns.Retain(ctx, "t", RetainOptions{Policy: p})
		require.NoError(t, err)
		require.Equal(t, RetainNothingToDo, res.Outcome)
		require.NoDirExists(t, filepath.Join(dir, "_indices", "fresh"))
		requireLinkIntact(t, dir, outside)
	})

	t.Run("a directory written into after it was found empty is kept", func(t *testing.T) {
		root := t.TempDir()
		ls, err := local.Open(root)
		require.NoError(t, err)
		w := newWorld(t, objstoretest.NewClockStore(ls))
		p := w.proc("retainer", 0)
		putLanceFixture(t, w.store, "t")
		dir := filepath.Join(root, TableDir("t"))
		for _, d := range []string{"stale", "stale2"} {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, lance.IndicesDir, d), 0o755))
		}
		policy := fixturePolicy(t, w.store, "t")
		policy.DeleteUnverified = true
		// stale/ was walked and found empty; an index build writes into it
		// while stale2/ is walked, before the run removes either.
		frozen := p.pause.PauseBefore(objstoretest.OpWalkStart, TableDir("t")+lance.IndicesDir+"stale2/", 0)
		done := make(chan error, 1)
		go func() {
			_, err := p.ns.Retain(ctx, "t", RetainOptions{Policy: policy})
			done <- err
		}()
		<-frozen.Reached()
		late := TableDir("t") + lance.IndicesDir + "stale/index.idx"
		_, err = w.store.Put(ctx, late, []byte("an index being built"))
		require.NoError(t, err)
		frozen.Release()
		require.NoError(t, <-done, "not a failure of the run")
		require.FileExists(t, filepath.Join(root, late))
		require.NoDirExists(t, filepath.Join(dir, lance.IndicesDir, "stale2"))
	})
}
