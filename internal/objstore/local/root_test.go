package local_test

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
)

// rootFiles is the same table in two directories: the one a store opens
// (a dropped table being purged) and the one the root path is repointed to
// (a live table of the same name).
var rootFiles = []string{
	"t.lance/_versions/1.manifest", "t.lance/_versions/2.manifest",
	"t.lance/data/a.lance", "t.lance/data/b.lance", "t.lance/_indices/i/index.idx",
	"t.deleted", "t.reaper-lock", "_reaper/README",
}

// repointedRoot is a root path whose target a test repoints: first names
// the directory the store opens, second the one the path names after
// repoint.
type repointedRoot struct {
	path, first, second string
	repoint             func(t *testing.T)
}

// repointings are the two ways a root path comes to name another
// directory: a release-style symlink flip (current -> v1 becomes
// current -> v2, atomically by rename) and a restore swapped in with mv
// (mv db db.old; mv db.restored db).
func repointings(t *testing.T) map[string]func(t *testing.T) *repointedRoot {
	return map[string]func(t *testing.T) *repointedRoot{
		"symlink flip": func(t *testing.T) *repointedRoot {
			base := t.TempDir()
			r := &repointedRoot{path: filepath.Join(base, "current"), first: filepath.Join(base, "v1"), second: filepath.Join(base, "v2")}
			require.NoError(t, os.Symlink(r.first, r.path))
			r.repoint = func(t *testing.T) {
				next := filepath.Join(base, "current.next")
				require.NoError(t, os.Symlink(r.second, next))
				require.NoError(t, os.Rename(next, r.path))
			}
			return r
		},
		"directory swap": func(t *testing.T) *repointedRoot {
			base := t.TempDir()
			r := &repointedRoot{path: filepath.Join(base, "db"), first: filepath.Join(base, "db"), second: filepath.Join(base, "db.restored")}
			r.repoint = func(t *testing.T) {
				require.NoError(t, os.Rename(r.path, filepath.Join(base, "db.old")))
				require.NoError(t, os.Rename(r.second, r.path))
				r.first, r.second = filepath.Join(base, "db.old"), r.path
			}
			return r
		},
	}
}

// fill writes rootFiles into dir, each body tagged with tag.
func fill(t *testing.T, dir, tag string) map[string]string {
	t.Helper()
	want := map[string]string{}
	for _, k := range rootFiles {
		want[k] = tag + " " + k
		writeFile(t, dir, k, want[k])
	}
	return want
}

// requireTree checks that dir holds exactly want (files; directories and
// nothing else besides).
func requireTree(t *testing.T, dir string, want map[string]string, msg string) {
	t.Helper()
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(body)
		return err
	}), "%s: walk %s", msg, dir)
	require.Equal(t, want, got, "%s: files of %s: got/want", msg, dir)
}

// A store acts on the one root directory it opened: once the root path
// names another directory, every call fails with ErrRootChanged, naming
// the path, and nothing of either directory changes.
func TestRootRepointed(t *testing.T) {
	for how, setup := range repointings(t) {
		t.Run(how, func(t *testing.T) {
			r := setup(t)
			old := fill(t, r.first, "opened")
			live := fill(t, r.second, "live")
			s := open(t, r.path)
			ctx := t.Context()
			lease, err := s.Head(ctx, "t.reaper-lock")
			require.NoError(t, err)
			r.repoint(t)

			walk := func(p string) error { return s.Walk(ctx, p, func([]objstore.Object) error { return nil }) }
			for _, op := range []struct {
				name string
				call func() error
			}{
				{"list", func() error { return s.List(ctx, "", func(objstore.Page) error { return nil }) }},
				{"walk root", func() error { return walk("") }},
				{"walk table", func() error { return walk("t.lance/") }},
				{"get", func() error { _, _, err := s.Get(ctx, "t.deleted", 1<<10); return err }},
				{"head", func() error { _, err := s.Head(ctx, "t.deleted"); return err }},
				{"put", func() error { _, err := s.Put(ctx, "t.reaper-purge", []byte("x")); return err }},
				{"put if absent", func() error { _, err := s.PutIfAbsent(ctx, "t.reaper-purge", []byte("x")); return err }},
				{"put if match", func() error { _, err := s.PutIfMatch(ctx, "t.reaper-lock", []byte("x"), lease.ETag); return err }},
				{"delete", func() error { return s.Delete(ctx, "t.lance/data/a.lance") }},
				{"delete if match", func() error { return s.DeleteIfMatch(ctx, "t.reaper-lock", lease.ETag) }},
				{"delete batch", func() error { return s.DeleteBatch(ctx, rootFiles) }},
				{"prune", func() error { return s.PruneEmpty(ctx, "t.lance/") }},
			} {
				err := op.call()
				require.ErrorIs(t, err, objstore.ErrRootChanged, "%s through a repointed root", op.name)
				require.ErrorContains(t, err, r.path, "%s: the error names the root", op.name)
				var rc *objstore.RootChangedError
				require.True(t, errors.As(err, &rc), "%s: a *RootChangedError says what changed: %v", op.name, err)
				require.NotEqual(t, rc.Was, rc.Now, "%s: %v", op.name, err)
			}
			requireTree(t, r.second, live, "the directory the root names now")
			requireTree(t, r.first, old, "the directory the store opened")
		})
	}
}

// The reproduction, made deterministic: the root is repointed in
// the middle of one delete batch (by the fence, asked before each unlink),
// whose keys span several directories, each resolved anew. The rest of the
// batch fails; the live table the path names now loses nothing.
func TestRootRepointedMidBatch(t *testing.T) {
	for how, setup := range repointings(t) {
		t.Run(how, func(t *testing.T) {
			r := setup(t)
			old := fill(t, r.first, "opened")
			live := fill(t, r.second, "live")
			s := open(t, r.path)
			keys := rootFiles[:5] // the table's files, in three directories
			flip := &repointFence{at: 1, flip: func() { r.repoint(t) }}
			err := s.DeleteBatch(objstore.WithFence(t.Context(), flip), keys)
			requireTree(t, r.second, live, "the live table the root names now")
			require.ErrorIs(t, err, objstore.ErrRootChanged)
			var be *objstore.BatchError
			require.True(t, errors.As(err, &be), "%v", err)
			require.Len(t, be.Failed, len(keys)-1, "every key after the first unlink failed: %v", err)
			delete(old, "t.lance/_indices/i/index.idx") // its directory sorts first
			requireTree(t, r.first, old, "the directory the store opened: one file went before the flip")
		})
	}
}

// repointFence allows every request and runs flip once, when it is asked for
// the at+1-th time: between two unlinks of one batch.
type repointFence struct {
	at, asked int
	flip      func()
}

func (f *repointFence) Allow() (time.Duration, error) {
	if f.asked == f.at {
		f.flip()
	}
	f.asked++
	return 0, nil
}

// A root removed after Open names nothing: that too is a changed root.
func TestRootRemoved(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "db")
	fill(t, dir, "opened")
	s := open(t, dir)
	require.NoError(t, os.Rename(dir, filepath.Join(base, "gone")))
	_, err := s.Head(context.Background(), "t.deleted")
	require.ErrorIs(t, err, objstore.ErrRootChanged)
	require.ErrorContains(t, err, "nothing")
}

// Reopening the repointed path is how a new pass adopts the new directory.
func TestRootReopened(t *testing.T) {
	r := repointings(t)["symlink flip"](t)
	fill(t, r.first, "opened")
	live := fill(t, r.second, "live")
	open(t, r.path)
	r.repoint(t)
	s, err := local.Open(r.path)
	require.NoError(t, err)
	body, _, err := s.Get(t.Context(), "t.deleted", 1<<10)
	require.NoError(t, err)
	require.Equal(t, live["t.deleted"], string(body))
}
