package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// A temp file left by a process killed mid-write is never listed, and a
// listing that meets one older than StaleTempAge removes it; a younger one
// may be a write in flight and stays.
func TestListRemovesStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := local.Open(dir)
	require.NoError(t, err)
	_, err = s.Put(context.Background(), "t.deleted", []byte("{}"))
	require.NoError(t, err)
	stale := filepath.Join(dir, ".reaper-tmp-stale")
	fresh := filepath.Join(dir, ".reaper-tmp-fresh")
	for _, p := range []string{stale, fresh} {
		require.NoError(t, os.WriteFile(p, []byte("half a lease"), 0o644))
	}
	old := time.Now().Add(-local.StaleTempAge - time.Minute)
	require.NoError(t, os.Chtimes(stale, old, old))

	var keys []string
	require.NoError(t, s.List(context.Background(), "", func(p objstore.Page) error {
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		return nil
	}))
	require.Equal(t, []string{"t.deleted"}, keys)
	require.NoFileExists(t, stale)
	require.FileExists(t, fresh)
}
