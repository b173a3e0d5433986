package roots_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/roots"
)

// seededTables is a fixed set of table names: the same in every run (a
// fixed seed), of the shapes LanceDB allows (letters, digits, _ - .),
// with a few written out that hash close to each other.
func seededTables(n int) []string {
	r := rand.New(rand.NewPCG(36, 4))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
	out := []string{"a", "b", "users", "users_v2", "events.2026-01", "t0", "t00", "T0"}
	seen := map[string]bool{}
	for _, s := range out {
		seen[s] = true
	}
	for len(out) < n {
		b := make([]byte, 1+r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if s := string(b); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// A root's tables split over n replicas, each replica taking its share,
// then reunited: every table is in exactly one share, and the shares
// together are every table, for every n (1 is no split).
func TestShareSplitsAndReunitesTables(t *testing.T) {
	t.Parallel()
	tables := seededTables(3000)
	for _, uri := range []string{"s3://bucket/tenants/acme", "file:///var/lib/lancedb"} {
		for _, n := range []int{0, 1, 2, 3, 4, 5, 8, 13} {
			owners := map[string][]int{}
			for i := range max(n, 1) {
				share := roots.ShareOf(uri, i, n)
				require.Equal(t, n > 1, share.Split())
				for _, tb := range tables {
					if share.Owns(tb) {
						owners[tb] = append(owners[tb], i)
					}
				}
			}
			require.Len(t, owners, len(tables), "%s split %d ways: every table in a share", uri, n)
			for tb, in := range owners {
				require.Len(t, in, 1, "%s split %d ways: %q in shares %v", uri, n, tb, in)
				require.Equal(t, roots.TableOwner(uri, tb, n), in[0], "TableOwner agrees with Owns")
			}
		}
	}
	require.True(t, roots.Share{}.Owns("anything"), "the zero share owns every table")
	require.False(t, roots.ShareOf("s3://b/db", 3, 3).Owns("t0"), "an index out of range owns nothing")
	require.False(t, roots.ShareOf("s3://b/db", -1, 3).Owns("t0"))
}

func TestShareBalance(t *testing.T) {
	t.Parallel()
	tables := seededTables(7000)
	for n := 2; n <= 7; n++ {
		want := len(tables) / n
		for i := range n {
			share, got := roots.ShareOf("s3://bucket/db", i, n), 0
			for _, tb := range tables {
				if share.Owns(tb) {
					got++
				}
			}
			require.InDelta(t, want, got, float64(want)*0.15, "%d ways, share %d: %d tables, want about %d", n, i, got, want)
		}
	}
}

// Adding a replica moves only the tables the new one wins, about 1/(n+1).
func TestShareMovesFew(t *testing.T) {
	t.Parallel()
	tables := seededTables(5000)
	for n := 1; n <= 7; n++ {
		moved := 0
		for _, tb := range tables {
			before, after := roots.TableOwner("s3://bucket/db", tb, n), roots.TableOwner("s3://bucket/db", tb, n+1)
			if before != after {
				moved++
				require.Equal(t, n, after, "%q moved from %d to %d, not to the new shard", tb, before, after)
			}
		}
		ideal := float64(len(tables)) / float64(n+1)
		require.InDelta(t, ideal, float64(moved), ideal*0.15, "%d -> %d shards moved %d tables, ideal %.0f", n, n+1, moved, ideal)
	}
}

// A table's shard depends on its root and its name, not on how the root
// is spelt; two roots split a name differently.
func TestShareDependsOnRootAndName(t *testing.T) {
	t.Parallel()
	for _, tb := range seededTables(50) {
		require.Equal(t, roots.TableOwner("file:///data/db", tb, 5), roots.TableOwner("/data/db/", tb, 5))
	}
	differ := 0
	for i := range 200 {
		name := fmt.Sprintf("users%d", i)
		if roots.TableOwner("s3://bucket/tenants/a", name, 4) != roots.TableOwner("s3://bucket/tenants/b", name, 4) {
			differ++
		}
	}
	require.Greater(t, differ, 100, "the same names in two roots land on the same shards: the root takes no part")
}

// TestShareGolden pins the split: a change to the hash reshuffles every
// deployment's tables at once, so it must be deliberate. The values were
// computed apart from this code: FNV-1a 64 of the canonical URI, a NUL and
// the name, scored per shard as Owner scores roots.
func TestShareGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		uri, table string
		want       [3]int // of 2, 3 and 7 shards
	}{
		{"file:///var/lib/lancedb", "users", [3]int{0, 0, 4}},
		{"file:///var/lib/lancedb", "events", [3]int{0, 0, 0}},
		{"s3://bucket/tenants/acme", "users", [3]int{1, 1, 3}},
		{"s3://bucket/tenants/acme", "orders.v2", [3]int{0, 0, 0}},
		{"s3://other/db", "t0", [3]int{0, 2, 2}},
	} {
		for i, n := range []int{2, 3, 7} {
			require.Equal(t, tc.want[i], roots.TableOwner(tc.uri, tc.table, n), "TableOwner(%q, %q, %d)", tc.uri, tc.table, n)
			require.True(t, roots.ShareOf(tc.uri, tc.want[i], n).Owns(tc.table))
		}
	}
}
