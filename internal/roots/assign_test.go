package roots_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/roots"
)

func manyRoots(n int) []roots.Root {
	out := make([]roots.Root, n)
	for i := range out {
		out[i] = roots.Root{URI: fmt.Sprintf("s3://bucket/tenants/t%04d", i)}
	}
	return out
}

func TestAssignPartition(t *testing.T) {
	t.Parallel()
	rs := manyRoots(500)
	for count := 1; count <= 7; count++ {
		seen := map[string]int{}
		for index := range count {
			for _, r := range roots.Assign(rs, index, count) {
				seen[r.URI]++
			}
		}
		require.Len(t, seen, len(rs), "count %d: every root assigned", count)
		for uri, n := range seen {
			require.Equal(t, 1, n, "count %d: %s in %d shards", count, uri, n)
		}
	}
	require.Equal(t, rs, roots.Assign(rs, 0, 0), "count 0 is no sharding")
	require.Nil(t, roots.Assign(rs, 3, 3), "index out of range owns nothing")
	require.Nil(t, roots.Assign(rs, -1, 3))
}

func TestAssignBalance(t *testing.T) {
	t.Parallel()
	rs := manyRoots(7000)
	for count := 2; count <= 7; count++ {
		want := len(rs) / count
		for index := range count {
			got := len(roots.Assign(rs, index, count))
			require.InDelta(t, want, got, float64(want)*0.15, "count %d index %d: got %d roots, want about %d", count, index, got, want)
		}
	}
}

func TestAssignStable(t *testing.T) {
	t.Parallel()
	rs := manyRoots(200)
	for count := 1; count <= 7; count++ {
		for index := range count {
			require.Equal(t, roots.Assign(rs, index, count), roots.Assign(rs, index, count))
		}
	}
	// Ownership depends only on the URI, not on the other roots, and the
	// spelling of a local root does not matter.
	require.Equal(t, roots.Owner("file:///data/db", 5), roots.Owner("/data/db/", 5))
	for _, r := range rs[:20] {
		one := roots.Assign([]roots.Root{r}, roots.Owner(r.URI, 4), 4)
		require.Equal(t, []roots.Root{r}, one)
	}
}

// TestAssignGolden pins the assignment: a change to the hash reshuffles
// every deployment's roots at once, so it must be deliberate.
func TestAssignGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		uri   string
		count int
		want  int
	}{
		{"file:///var/lib/lancedb", 2, 1},
		{"file:///var/lib/lancedb", 3, 1},
		{"file:///var/lib/lancedb", 7, 6},
		{"s3://bucket/tenants/acme", 2, 1},
		{"s3://bucket/tenants/acme", 3, 1},
		{"s3://bucket/tenants/acme", 7, 4},
		{"s3://bucket/tenants/globex", 2, 0},
		{"s3://bucket/tenants/globex", 3, 2},
		{"s3://bucket/tenants/globex", 7, 2},
		{"s3://other/db", 2, 0},
		{"s3://other/db", 3, 0},
		{"s3://other/db", 7, 4},
		{"file:///data/a", 2, 0},
		{"file:///data/a", 3, 0},
		{"file:///data/a", 7, 0},
	} {
		require.Equal(t, tc.want, roots.Owner(tc.uri, tc.count), "Owner(%q, %d)", tc.uri, tc.count)
	}
}

func TestAssignMovesFew(t *testing.T) {
	t.Parallel()
	rs := manyRoots(5000)
	for n := 1; n <= 7; n++ {
		moved := 0
		for _, r := range rs {
			before, after := roots.Owner(r.URI, n), roots.Owner(r.URI, n+1)
			if before != after {
				moved++
				require.Equal(t, n, after, "%s moved from %d to %d, not to the new shard", r.URI, before, after)
			}
		}
		ideal := float64(len(rs)) / float64(n+1)
		require.LessOrEqual(t, float64(moved), ideal*1.15, "%d -> %d shards moved %d roots, ideal %.0f", n, n+1, moved, ideal)
		require.GreaterOrEqual(t, float64(moved), ideal*0.85, "%d -> %d shards moved %d roots, ideal %.0f", n, n+1, moved, ideal)
	}
}
