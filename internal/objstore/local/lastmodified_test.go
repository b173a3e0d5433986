package local_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// A file copied in with its old mtime kept (cp -p, rsync -a) reports when
// it arrived: LastModified is the later of mtime and ctime.
func TestLastModifiedIsLaterOfMtimeAndCtime(t *testing.T) {
	root := t.TempDir()
	p := writeFile(t, root, "t.lance/data/old.lance", "old")
	y2001 := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(p, y2001, y2001))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, y2001, fi.ModTime().UTC(), "the mtime says 2001")
	s := open(t, root)
	now := time.Now()

	head, err := s.Head(t.Context(), "t.lance/data/old.lance")
	require.NoError(t, err)
	_, got, err := s.Get(t.Context(), "t.lance/data/old.lance", 1<<20)
	require.NoError(t, err)
	walked := walkObjects(t, s, "t.lance/")
	require.Len(t, walked, 1)
	var listed []time.Time
	require.NoError(t, s.List(t.Context(), "t.lance/data/", func(pg objstore.Page) error {
		for _, o := range pg.Objects {
			listed = append(listed, o.LastModified)
		}
		return nil
	}))
	require.Len(t, listed, 1)
	for name, lm := range map[string]time.Time{"head": head.LastModified, "get": got.LastModified, "walk": walked[0].LastModified, "list": listed[0]} {
		require.WithinDuration(t, now, lm, time.Minute, "%s: LastModified is the ctime, not the 2001 mtime", name)
	}
	require.Equal(t, head.ETag, got.ETag)
}
