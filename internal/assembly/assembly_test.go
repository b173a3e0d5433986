package assembly_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/assembly"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

// The root seam (Options.WrapRoot) wraps the roots' stores only, and a
// seam in the context reaches neither discovery nor the ledger: a fault
// or clock meant for a root's tables never sees its parent's listing or
// the audit trail. The roots are discovery's, then this shard's.
func TestSeamsAndShards(t *testing.T) {
	parent := t.TempDir()
	// Tenants of both shards, whatever the temp directory hashes to.
	perShard, ours := [2]int{}, 0
	for i := 0; perShard[0] < 2 || perShard[1] < 2; i++ {
		require.Less(t, i, 64, "no two tenants of each shard in 64 names")
		tenant := filepath.Join(parent, fmt.Sprintf("tenant%02d", i))
		perShard[roots.Owner(tenant, 2)]++
		p := filepath.Join(tenant, "t.lance", "_versions", "1.manifest")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	ours = perShard[1]
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: parent + "/*"}}
	cfg.Audit.Location = t.TempDir()
	cfg.Shard = config.Shard{Count: 2, Index: 1}
	require.NoError(t, cfg.ValidateForPass())

	var mu sync.Mutex
	wrapped := map[string]int{}
	seam := func(name string) func(objstore.Store) objstore.Store {
		return func(s objstore.Store) objstore.Store {
			mu.Lock()
			defer mu.Unlock()
			wrapped[name]++
			return s
		}
	}
	ctx := stack.WithWrapBackend(t.Context(), seam("context"))
	p, err := assembly.New(ctx, assembly.Options{Config: cfg, WrapRoot: seam("root")})
	require.NoError(t, err)
	require.NotNil(t, p.Ledger)
	rs, err := p.Roots(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{}, wrapped, "discovery and the ledger opened no seam")

	var all []roots.Root
	for _, r := range rs {
		require.Equal(t, 1, roots.Owner(r.URI, 2), "%s is shard 0's", r.URI)
		all = append(all, r)
		_, err := p.Open(ctx, r)
		require.NoError(t, err)
	}
	require.Len(t, all, ours, "shard 1's tenants")
	require.Equal(t, map[string]int{"root": len(all)}, wrapped, "each root's store through the root seam")
}
