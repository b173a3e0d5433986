package local_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// childEnv, when set to a store directory, turns the re-executed test
// binary into a cross-process race child (see TestCrossProcessRace).
const (
	childEnv   = "REAPER_LOCAL_CHILD"
	childIDEnv = "REAPER_LOCAL_CHILD_ID"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(runChild(dir))
	}
	os.Exit(m.Run())
}

func runChild(dir string) int {
	s, err := local.Open(dir)
	if err == nil {
		err = objstoretest.RaceChild(context.Background(), s, os.Getenv(childIDEnv), os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "race child:", err)
		return 1
	}
	return 0
}

// testPageSize keeps the paging clauses cheap: every Put costs two fsyncs.
const testPageSize = 50

func open(t *testing.T, dir string) *local.Store {
	t.Helper()
	s, err := local.Open(dir, local.WithPageSize(testPageSize))
	require.NoError(t, err, "open %s", dir)
	return s
}

func TestLocal(t *testing.T) {
	t.Parallel()
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		return open(t, t.TempDir())
	}, objstoretest.WithPageSize(testPageSize))
}

// TestLocalUnderPrefix roots the store inside a larger tree and checks that
// nothing outside the root is touched and the root itself is never pruned.
func TestLocalUnderPrefix(t *testing.T) {
	t.Parallel()
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		outer := t.TempDir()
		root := filepath.Join(outer, "bucket", "tables.lance")
		require.NoError(t, os.MkdirAll(root, 0o755))
		sibling := filepath.Join(outer, "bucket", "tables.lance.deleted")
		require.NoError(t, os.WriteFile(sibling, []byte("keep"), 0o644))
		t.Cleanup(func() {
			fi, err := os.Stat(root)
			require.NoError(t, err, "root after the clause")
			require.True(t, fi.IsDir(), "root is a directory")
			got, err := os.ReadFile(sibling)
			require.NoError(t, err, "sibling of the root")
			require.Equal(t, "keep", string(got), "sibling body: got/want")
		})
		return open(t, root)
	}, objstoretest.WithPageSize(testPageSize))
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct{ path, want string }{
		{"relative/dir", "not absolute"},
		{filepath.Join(dir, "missing"), "does not exist"},
		{file, "not a directory"},
	} {
		_, err := local.Open(tc.path)
		require.ErrorContains(t, err, tc.want, "open %s", tc.path)
		require.ErrorContains(t, err, tc.path, "open %s: the error names the path", tc.path)
	}
	s, err := local.Open(dir + "/./")
	require.NoError(t, err, "open an uncleaned path")
	require.Equal(t, "file://"+dir, s.URI(), "URI: got/want")
}

func TestPruneEmptyParents(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	ctx := t.Context()
	for _, k := range []string{"t.lance/data/a.lance", "t.lance/data/b.lance", "t.lance/_versions/1.manifest", "u.lance/x", "v/w/x/y"} {
		_, err := s.Put(ctx, k, []byte(k))
		require.NoError(t, err, "put %s", k)
	}

	require.NoError(t, s.Delete(ctx, "t.lance/data/a.lance"))
	require.DirExists(t, filepath.Join(root, "t.lance/data"), "data/ still holds b.lance")
	require.NoError(t, s.DeleteBatch(ctx, []string{"t.lance/data/b.lance"}))
	require.NoDirExists(t, filepath.Join(root, "t.lance/data"), "emptied data/")
	require.DirExists(t, filepath.Join(root, "t.lance"), "t.lance still holds _versions/")

	head, err := s.Head(ctx, "t.lance/_versions/1.manifest")
	require.NoError(t, err)
	require.NoError(t, s.DeleteIfMatch(ctx, "t.lance/_versions/1.manifest", head.ETag))
	require.NoDirExists(t, filepath.Join(root, "t.lance"), "emptied table directory")

	require.NoError(t, s.DeleteBatch(ctx, []string{"u.lance/x", "v/w/x/y"}))
	entries, err := os.ReadDir(root)
	require.NoError(t, err, "root survives emptying")
	require.Empty(t, entries, "root entries after deleting everything")
}

// Temp files a crashed writer left (reaper's name, a regular file, the
// sticky bit: crashedTemp) are hidden from listings and walks. A user's
// file that merely has such a name, anywhere, inside a table too, is an
// object like any other: listed, walked, read, deleted. Only writes refuse
// such a key.
func TestTempFilesInvisible(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	ctx := t.Context()
	_, err := s.Put(ctx, "t/x", []byte("x"))
	require.NoError(t, err)
	crashed := ".reaper-tmp-" + rand.Text() // exactly a temp name of reaper's
	for _, p := range []string{crashed, "t/" + crashed} {
		crashedTemp(t, root, p)
	}
	// A user's files that are named like one, or merely start like one.
	users := []string{"u/.reaper-tmp-notes", "t.lance/data/.reaper-tmp-" + rand.Text(), "t.lance/.reaper-tmp-" + rand.Text() + "/part-0"}
	for _, k := range users {
		writeFile(t, root, k, "a user's "+k)
	}

	objs, prefixes := listKeys(t, s, "t/")
	require.Equal(t, []string{"t/x"}, objs, "listed under t/: got/want")
	require.Empty(t, prefixes)
	objs, _ = listKeys(t, s, "")
	require.Empty(t, objs, "listed at the root: got/want")
	objs, _ = listKeys(t, s, "t.lance/data/")
	require.Equal(t, users[1:2], objs, "a user's file named like a temp file is listed")
	require.Equal(t, []string{users[2], users[1], "t/x", users[0]}, walkKeys(t, s, ""), "walked: got/want")

	for _, k := range users {
		_, err := s.Head(ctx, k)
		require.NoError(t, err, "head %s", k)
		body, _, err := s.Get(ctx, k, 1<<10)
		require.NoError(t, err, "get %s", k)
		require.Equal(t, "a user's "+k, string(body))
	}
	require.NoError(t, s.Delete(ctx, users[1]))
	require.NoError(t, s.DeleteBatch(ctx, users[2:]))
	require.Empty(t, walkKeys(t, s, "t.lance/"), "a user's files named like temp files are deleted")

	for _, k := range []string{crashed, "t/" + crashed, "t.lance/" + crashed + "/x"} {
		_, err := s.Put(ctx, k, []byte("x"))
		require.ErrorIs(t, err, objstore.ErrInvalidKey, "put reserved key %s", k)
	}
	_, err = s.Put(ctx, "t/.reaper-tmp-x", []byte("x"))
	require.NoError(t, err, "only reaper's exact temp names are reserved")
	fi, err := os.Stat(filepath.Join(root, "t", "x"))
	require.NoError(t, err)
	require.Zero(t, fi.Mode()&os.ModeSticky, "a published object does not keep the temp mark")
}

// TestNoTempLeftBehind checks every write path, winning or losing, cleans up
// its temp file.
func TestNoTempLeftBehind(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	ctx := t.Context()
	obj, err := s.Put(ctx, "d/k", []byte("1"))
	require.NoError(t, err)
	_, err = s.PutIfAbsent(ctx, "d/k", []byte("2"))
	require.ErrorIs(t, err, objstore.ErrPrecondition)
	_, err = s.PutIfAbsent(ctx, "d/new", []byte("2"))
	require.NoError(t, err)
	_, err = s.PutIfMatch(ctx, "d/k", []byte("3"), "stale")
	require.ErrorIs(t, err, objstore.ErrPrecondition)
	_, err = s.PutIfMatch(ctx, "d/k", []byte("3"), obj.ETag)
	require.NoError(t, err)

	entries, err := os.ReadDir(filepath.Join(root, "d"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"k", "new"}, names, "files in d/: got/want")
}

func TestETagFormat(t *testing.T) {
	s := open(t, t.TempDir())
	obj, err := s.Put(t.Context(), "k", []byte("body"))
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]+-[0-9a-f]+-4$`), obj.ETag, "ETag is inode-mtime-size in hex")
}

// TestWritesRacePrune has writers and deleters share directories, so pruning
// keeps removing directories that writers are about to use.
func TestWritesRacePrune(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				key := fmt.Sprintf("p.lance/data/w%d-%d", w, i)
				if _, err := s.Put(ctx, key, []byte(key)); err != nil {
					errs <- err
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Walk(ctx, "", func(objs []objstore.Object) error {
		return fmt.Errorf("objects left: %v", objs)
	}))
}

// TestCrossProcessRace re-executes this test binary as race children that
// share one store directory: two processes must never both win PutIfAbsent
// or PutIfMatch.
func TestCrossProcessRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	objstoretest.RaceProcesses(t, s, 4, 50, func(i int) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, fmt.Sprint(childIDEnv, "=", i))
		return cmd
	})
}

// A directory larger than the sort limit is streamed, not sorted in memory: every
// object still arrives exactly once, and a name prefix still filters.
func TestWalkHugeDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := local.Open(dir, local.WithPageSize(700))
	require.NoError(t, err)
	n := 10000 + 1500 // more than the 10,000-entry sort limit
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "t.lance", "data"), 0o755))
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "t.lance", "data", fmt.Sprintf("%06d.lance", i)), nil, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.lance", "_versions_1.manifest"), nil, 0o644))
	for i := range 50 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "t.lance", "data", fmt.Sprintf("zz%d.lance", i)), nil, 0o644))
	}
	seen := map[string]int{}
	pages := 0
	require.NoError(t, s.Walk(context.Background(), "t.lance/", func(objs []objstore.Object) error {
		pages++
		require.LessOrEqual(t, len(objs), 700)
		for _, o := range objs {
			seen[o.Key]++
		}
		return nil
	}))
	require.Len(t, seen, n+51)
	for k, c := range seen {
		require.Equal(t, 1, c, k)
	}
	count := 0
	require.NoError(t, s.Walk(context.Background(), "t.lance/data/0", func(objs []objstore.Object) error {
		for _, o := range objs {
			require.True(t, strings.HasPrefix(o.Key, "t.lance/data/0"), o.Key)
		}
		count += len(objs)
		return nil
	}))
	require.Equal(t, n, count, "prefix 0 matches every numbered file of the streamed directory, no zz file")
}
