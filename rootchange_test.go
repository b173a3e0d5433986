package reaper_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
)

// An embedded Namespace over a release symlink acts on the directory it
// opened: once the link is flipped, drop, revive, hold and purge fail with
// ErrRootChanged and change nothing in the new directory; opening the root
// again adopts it.
func TestNamespaceRootChanged(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	v1, v2, current := filepath.Join(base, "v1"), filepath.Join(base, "v2"), filepath.Join(base, "current")
	for _, d := range []string{v1, v2} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "t.lance", "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "t.lance", "data", "0.lance"), []byte(d), 0o644))
	}
	require.NoError(t, os.Symlink(v1, current))
	ns, err := reaper.Open(ctx, current, reaper.Options{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(current))
	require.NoError(t, os.Symlink(v2, current))

	_, err = ns.Drop(ctx, "t", time.Hour)
	require.ErrorIs(t, err, reaper.ErrRootChanged, "drop")
	require.ErrorIs(t, ns.Revive(ctx, "t"), reaper.ErrRootChanged, "revive")
	_, err = ns.Hold(ctx, "t", "case 7")
	require.ErrorIs(t, err, reaper.ErrRootChanged, "hold")
	_, err = ns.Purge(ctx, "t", reaper.PurgeOptions{})
	require.ErrorIs(t, err, reaper.ErrRootChanged, "purge")
	entries, err := os.ReadDir(v2)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written into the directory the root names now")

	again, err := reaper.Open(ctx, current, reaper.Options{})
	require.NoError(t, err)
	st, err := again.Status(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, reaper.StateExists, st[0].State)
}
