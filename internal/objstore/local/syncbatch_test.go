package local_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// A delete batch made with a SyncBatch leaves one fsync per touched
// directory to the caller's flush instead of syncing before it returns,
// however many batches touched that directory; without one it syncs itself.
func TestDeleteBatchDefersTheDirectorySync(t *testing.T) {
	dir := t.TempDir()
	s, err := local.Open(dir)
	require.NoError(t, err)
	var keys []string
	for i := range 30 {
		k := fmt.Sprintf("t.lance/data/%02d.lance", i)
		if i%3 == 0 {
			k = fmt.Sprintf("t.lance/_versions/%02d.manifest", i)
		}
		writeFile(t, dir, k, "x")
		keys = append(keys, k)
	}
	b := objstore.NewSyncBatch()
	ctx := objstore.WithSyncBatch(t.Context(), b)
	for i := 0; i < 20; i += 5 {
		require.NoError(t, s.DeleteBatch(ctx, keys[i:i+5]))
	}
	require.Equal(t, 2, b.Pending(), "one pending sync per directory (data/ and _versions/), not one per batch")
	require.NoError(t, b.Flush())
	require.Zero(t, b.Pending())

	require.NoError(t, s.DeleteBatch(t.Context(), keys[20:]), "no batch in the context: synced in the call")
	require.Zero(t, b.Pending())
	require.Equal(t, []string{"."}, tree(t, dir), "everything deleted and the emptied directories pruned")
}
