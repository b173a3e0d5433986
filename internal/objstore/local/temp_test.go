package local_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// A temp file left by a process killed mid-write is never listed. Only a
// write removes one, and only in the directory it writes into, only a
// temp file of reaper's (its exact name, a regular file, its mark), only
// when older than StaleTempAge, and only the first time that Store writes
// there. A user's file named like one is never removed. Listings never
// remove anything.
func TestStaleTempCleanup(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := writeFile(t, outside, "target", "target")
	old := time.Now().Add(-local.StaleTempAge - time.Minute)
	tmp := func() string { return ".reaper-tmp-" + rand.Text() }
	entries := []struct {
		path    string
		kind    string // temp (marked), file (a user's), dir or link
		old     bool
		removed bool
	}{
		{path: "t/" + tmp(), kind: "temp", old: true, removed: true},
		{path: "t/" + tmp(), kind: "temp"},            // may be a write in flight
		{path: "t/" + tmp(), kind: "file", old: true}, // a user's, named like one
		{path: "t/.reaper-tmp-notes", kind: "file", old: true},
		{path: "t/.reaper-tmp-" + rand.Text()[:25], kind: "file", old: true},
		{path: "t/.reaper-tmp-" + strings.ToLower(rand.Text()), kind: "file", old: true},
		{path: "t/.reaper-tmp-" + rand.Text()[:25] + "1", kind: "file", old: true},
		{path: "t/" + tmp(), kind: "dir", old: true},
		{path: "t/" + tmp(), kind: "link", old: true},
		{path: "u.lance/" + tmp(), kind: "temp", old: true}, // never written into
		{path: tmp(), kind: "temp", old: true},              // the root, never written into
	}
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		switch e.kind {
		case "temp":
			crashedTemp(t, root, e.path)
		case "file":
			writeFile(t, root, e.path, "half a lease")
		case "dir":
			require.NoError(t, os.MkdirAll(p, 0o755))
		case "link":
			symlink(t, target, root, e.path)
		}
		if e.old {
			ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
			require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW), "age %s", e.path)
		}
	}
	requireAll := func(msg string, removedToo bool) {
		t.Helper()
		for _, e := range entries {
			_, err := os.Lstat(filepath.Join(root, e.path))
			if e.removed && !removedToo {
				require.ErrorIs(t, err, os.ErrNotExist, "%s: %s", msg, e.path)
			} else {
				require.NoError(t, err, "%s: %s", msg, e.path)
			}
		}
	}

	s := open(t, root)
	seen := map[string]bool{}
	for _, prefix := range []string{"", "t/", "u.lance/"} {
		objs, prefixes := listKeys(t, s, prefix)
		for _, k := range append(objs, prefixes...) {
			seen[strings.TrimSuffix(k, "/")] = true
		}
		for _, k := range walkKeys(t, s, prefix) {
			seen[k] = true
		}
	}
	for _, e := range entries {
		require.Equal(t, e.kind != "temp", seen[e.path], "%s (%s): listed or walked: got/want", e.path, e.kind)
	}
	requireAll("after listings", true)

	_, err := s.Put(t.Context(), "t/x", []byte("x"))
	require.NoError(t, err)
	requireAll("after a write into t/", false)
	requireContent(t, target, "target")

	// Once per directory per Store: a second write does not read t/ again,
	// a new Store's first write does.
	late := crashedTemp(t, root, "t/"+tmp())
	require.NoError(t, os.Chtimes(late, old, old))
	_, err = s.Put(t.Context(), "t/y", []byte("y"))
	require.NoError(t, err)
	require.FileExists(t, late, "the same Store cleans t/ once")
	_, err = open(t, root).PutIfAbsent(t.Context(), "t/z", []byte("z"))
	require.NoError(t, err)
	require.NoFileExists(t, late, "a new Store's first write into t/")
}
