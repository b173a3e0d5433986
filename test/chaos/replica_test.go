package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/worker"
)

// TestReplicas runs three `reaper purge` processes at once over the same
// two roots (one local, one on S3), writing one shared audit ledger. Each
// due table must be purged exactly once: the ledger holds exactly one
// "purged" row per table across the three, the tables are gone, everything
// else is byte-identical, and nothing failed: contention shows only as
// skipped (locked) or conflict rows (the marker vanished under the lease or
// since the plan, because a replica purged the table first).
func TestReplicas(t *testing.T) {
	t.Parallel()
	base := baseSeed(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_REPLICA_ROUNDS", 2, 20)
	for i := range rounds {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { replicaRound(t, seed) })
	}
}

const replicas = 3

type replicaRoot struct {
	b *backend
	f *fixture
}

func replicaRound(t *testing.T, seed uint64) {
	rng := newRand(seed)
	roots := []replicaRoot{{b: localBackend(t)}, {b: s3Backend(t, "tenant/db")}}
	cfg := map[string]any{}
	var cfgRoots []map[string]any
	for i := range roots {
		roots[i].f = newFixture(rng, mix{kindDue: 16, kindNotDue: 2, kindLive: 3, kindOrphan: 2, kindHeld: 1}, [2]int{3, 25})
		roots[i].f.write(t, roots[i].b)
		cfgRoots = append(cfgRoots, map[string]any{"uri": roots[i].b.uri, "storage_options": roots[i].b.opts})
	}
	audit := filepath.Join(t.TempDir(), "audit")
	cfg["roots"] = cfgRoots
	cfgPath := filepath.Join(t.TempDir(), "reaper.yaml")
	raw, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, raw, 0o600))

	since := time.Now().Add(-time.Minute)
	args := append(purgeArgs(30*time.Second), "--config", cfgPath, "--set", "audit.location="+audit)
	procs := make([]procSpec, replicas)
	for i := range procs {
		procs[i] = procSpec{fmt.Sprintf("replica %d", i), args}
	}
	results := runAll(t, procs)
	for i, r := range results {
		require.Equal(t, 0, r.code, "replica %d must not fail:\n%s", i, r)
	}

	store, err := all.Open(context.Background(), audit, nil)
	require.NoError(t, err)
	rows, err := ledger.Read(context.Background(), store, since)
	require.NoError(t, err)
	passes := map[string]bool{}
	purged := map[string]int{}
	actions := map[string]int{}
	for _, row := range rows {
		passes[row.PassID] = true
		reason, _, _ := strings.Cut(row.Reason, ":") // "<reason>: <detail>"
		actions[row.Action+"/"+reason]++
		require.NotEqual(t, ledger.ActionFailed, row.Action, "seed %d: failed row: %+v", seed, row)
		if row.Action == ledger.ActionSkipped {
			require.Contains(t, []string{worker.ReasonLocked, worker.ReasonNotDue}, reason, "seed %d: row %+v", seed, row)
		}
		if row.Action == ledger.ActionPurged {
			purged[row.Root+" "+row.Table]++
		}
	}
	require.Len(t, passes, replicas, "seed %d: one ledger file per replica pass", seed)
	for _, rr := range roots {
		snap := take(t, rr.b)
		where := fmt.Sprintf("seed %d, root %s", seed, rr.b.name)
		checkSafe(t, rr.f, snap, where)
		ok, why := purgedAll(rr.f, snap)
		require.True(t, ok, "%s: a due table survived three replicas: %s", where, why)
		require.Empty(t, staleLeases(t, rr.b, time.Now()), where)
		for _, tb := range rr.f.tables {
			n := purged[canonical(t, rr.b.uri)+" "+tb.name]
			if tb.kind.purgeable() {
				require.Equal(t, 1, n, "%s: %s purged %d times by %d replicas (ledger)", where, tb.name, n, replicas)
			} else {
				require.Zero(t, n, "%s: %s (%s) purged", where, tb.name, tb.kind)
			}
		}
	}
	keys := sortedKeys(actions)
	summary := make([]string, 0, len(keys))
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s=%d", k, actions[k]))
	}
	slices.Sort(summary)
	t.Logf("seed %d: %d ledger rows from %d passes: %s", seed, len(rows), len(passes), strings.Join(summary, " "))
}

// canonical is a root URI as the ledger records it.
func canonical(t testing.TB, uri string) string {
	loc, err := objstore.ParseLocation(uri)
	require.NoError(t, err)
	return loc.String()
}
