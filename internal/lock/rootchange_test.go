//go:build !fuzzonly

package lock

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

// A local root whose path comes to name another directory (a symlink
// flip) can never reach the lease again: the first renewal loses it, and
// the loss names the root change, so the work under the lease reports the
// move rather than a bare lost lease (or, later, a missed deadline).
func TestRootChangeLosesTheLease(t *testing.T) {
	base := t.TempDir()
	v1, v2, current := filepath.Join(base, "v1"), filepath.Join(base, "v2"), filepath.Join(base, "current")
	require.NoError(t, os.Mkdir(v1, 0o755))
	require.NoError(t, os.Mkdir(v2, 0o755))
	require.NoError(t, os.Symlink(v1, current))
	s, err := local.Open(current)
	require.NoError(t, err)
	// A deadline far beyond the first renewal: only the renewal can lose it.
	l := &Locker{Store: s, TTL: 20 * time.Second, RenewInterval: 20 * time.Millisecond, Margin: 2 * time.Second, Logger: quietLogger()}
	lease, err := l.Acquire(t.Context(), testKey)
	require.NoError(t, err)
	require.NoError(t, os.Remove(current))
	require.NoError(t, os.Symlink(v2, current))

	waitDone(t, lease.Context(), "the lease's context to be cancelled")
	cause := context.Cause(lease.Context())
	require.ErrorIs(t, cause, ErrLost)
	require.ErrorIs(t, cause, objstore.ErrRootChanged, "the loss names the root change: %v", cause)
	entries, err := os.ReadDir(v2)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written into the directory the root names now")
}
