package local_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// A temp file left by a process killed mid-write is never listed. Only a
// write removes one, and only in the directory it writes into, only a
// regular file named exactly like reaper's temp files, only when older than
// StaleTempAge, and only the first time that Store writes there. Listings
// never remove anything.
func TestStaleTempCleanup(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := writeFile(t, outside, "target", "target")
	old := time.Now().Add(-local.StaleTempAge - time.Minute)
	tmp := func() string { return ".reaper-tmp-" + rand.Text() }
	entries := []struct {
		path    string
		kind    string // file, dir or link
		old     bool
		removed bool
	}{
		{path: "t/" + tmp(), kind: "file", old: true, removed: true},
		{path: "t/" + tmp(), kind: "file"}, // may be a write in flight
		{path: "t/.reaper-tmp-notes", kind: "file", old: true},
		{path: "t/.reaper-tmp-" + rand.Text()[:25], kind: "file", old: true},
		{path: "t/.reaper-tmp-" + strings.ToLower(rand.Text()), kind: "file", old: true},
		{path: "t/.reaper-tmp-" + rand.Text()[:25] + "1", kind: "file", old: true},
		{path: "t/" + tmp(), kind: "dir", old: true},
		{path: "t/" + tmp(), kind: "link", old: true},
		{path: "u.lance/" + tmp(), kind: "file", old: true}, // never written into
		{path: tmp(), kind: "file", old: true},              // the root, never written into
	}
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		switch e.kind {
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
	tempName := regexp.MustCompile(`(^|/)\.reaper-tmp-[A-Z2-7]{26}/?$`)
	for _, prefix := range []string{"", "t/", "u.lance/"} {
		objs, prefixes := listKeys(t, s, prefix)
		for _, k := range append(objs, prefixes...) {
			require.NotRegexp(t, tempName, k, "list %q shows a temp name", prefix)
		}
		for _, k := range walkKeys(t, s, prefix) {
			require.NotRegexp(t, tempName, k, "walk %q shows a temp name", prefix)
		}
	}
	require.Contains(t, walkKeys(t, s, "t/"), "t/.reaper-tmp-notes", "a user file merely starting like a temp name is listed")
	requireAll("after listings", true)

	_, err := s.Put(t.Context(), "t/x", []byte("x"))
	require.NoError(t, err)
	requireAll("after a write into t/", false)
	requireContent(t, target, "target")

	// Once per directory per Store: a second write does not read t/ again,
	// a new Store's first write does.
	late := writeFile(t, root, "t/"+tmp(), "late")
	require.NoError(t, os.Chtimes(late, old, old))
	_, err = s.Put(t.Context(), "t/y", []byte("y"))
	require.NoError(t, err)
	require.FileExists(t, late, "the same Store cleans t/ once")
	_, err = open(t, root).PutIfAbsent(t.Context(), "t/z", []byte("z"))
	require.NoError(t, err)
	require.NoFileExists(t, late, "a new Store's first write into t/")
}
