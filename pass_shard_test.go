package reaper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
)

// A pass with shard.count 2 and shard.index 0 visits only the roots stable
// hashing gives shard 0, as `reaper purge --shard 0/2` does: the other
// replica purges the rest.
func TestPurgeRootsTakesOnlyItsShard(t *testing.T) {
	ctx := context.Background()
	var all []reaper.Root
	want := map[string]bool{}
	perShard := [2]int{}
	for tries := 0; perShard[0] < 2 || perShard[1] < 2; tries++ {
		require.Less(t, tries, 64, "no two roots of each shard in 64 temp directories")
		r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
		shard := roots.Owner(r.URI, 2)
		if perShard[shard] == 2 {
			continue
		}
		perShard[shard]++
		writeTable(t, r, "kept", 1)
		_, err := openFacade(t, r).Drop(ctx, "kept", 30*24*time.Hour)
		require.NoError(t, err)
		all = append(all, reaper.Root{URI: r.URI})
		if shard == 0 {
			want[r.URI] = true
		}
	}
	rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
		Roots:    all,
		DryRun:   true,
		Settings: map[string]string{"shard.count": "2", "shard.index": "0"},
	})
	require.NoError(t, err)
	got := map[string]bool{}
	for _, rr := range rep.Roots {
		require.Equal(t, 0, roots.Owner(rr.Root, 2), "root %s belongs to shard 1", rr.Root)
		got[rr.Root] = true
	}
	require.Len(t, got, len(want), "visited %v of %d roots; shard 0 owns %v", got, len(all), want)
}

// With shard.by table every replica visits the root and decides only the
// tables stable hashing gives it, as `reaper purge --shard I/N:table`
// does: the replicas together decide every table once.
func TestPurgeRootsTakesItsShareOfTables(t *testing.T) {
	ctx := context.Background()
	r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
	ns := openFacade(t, r)
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("t%d", i)
		writeTable(t, r, name, 1)
		_, err := ns.Drop(ctx, name, 30*24*time.Hour)
		require.NoError(t, err)
		names = append(names, name)
	}
	decided := map[string][]int{}
	for i := range 2 {
		rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
			Roots:    []reaper.Root{{URI: r.URI}},
			DryRun:   true,
			Settings: map[string]string{"shard.count": "2", "shard.index": fmt.Sprint(i), "shard.by": "table"},
		})
		require.NoError(t, err)
		require.Len(t, rep.Roots, 1)
		require.Equal(t, len(names), rep.Roots[0].Plan.Tables, "the whole root planned")
		for d := range rep.Roots[0].All() {
			require.Equal(t, i, roots.TableOwner(rep.Roots[0].Root, d.Table, 2), "replica %d decided %s", i, d.Table)
			decided[d.Table] = append(decided[d.Table], i)
		}
	}
	require.Len(t, decided, len(names))
	for name, by := range decided {
		require.Len(t, by, 1, "%s decided by %v", name, by)
	}
}
