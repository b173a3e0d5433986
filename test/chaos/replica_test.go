package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// TestReplicas runs three `reaper purge` processes at once over the same
// two roots (one local, one on S3), writing one shared audit ledger, while
// a `reaper revive` races them on up to two due tables of each root.
//
// Each due table must be purged exactly once: the ledger holds exactly one
// "purged" row per table across the three, the tables are gone, everything
// else is byte-identical (live, held, not-due and link tables, the
// sentinels outside the root), and nothing failed but the link tables
// (not_a_table): contention shows only as skipped (locked) or conflict rows
// (the marker vanished under the lease or since the plan, because a replica
// purged the table first or the revive won). A table the revive won is
// whole without its marker and has no purged row; one it lost is gone.
func TestReplicas(t *testing.T) {
	t.Parallel()
	base := baseSeed(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_REPLICA_ROUNDS", 2, 20)
	for i := range rounds {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			replicaRound(t, seed, [replicas]time.Duration{}, false)
		})
	}
}

// TestReplicasSkewedClocks is TestReplicas with replicas whose host
// clocks differ: each runs with REAPER_CLOCK_OFFSET, by up to the skew
// allowance (-5m, 0, +5m) or far beyond it (-7 days, +7 days), which must
// change nothing but the timestamps of their logs, reports and ledger rows
// (each replica's pass is dated by its own clock): due-ness and takeovers
// are judged by the store's clock. A replica whose clock is days behind
// still purges (no due table is ever reported not_due), and one days ahead
// purges nothing early (no not-due table is purged). TestClockOffset is
// the same knob on one process.
func TestReplicasSkewedClocks(t *testing.T) {
	t.Parallel()
	base := baseSeed(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_SKEWED_ROUNDS", len(replicaOffsets), 20)
	for i := range rounds {
		seed := base + uint64(i)
		offsets := replicaOffsets[i%len(replicaOffsets)]
		t.Run(fmt.Sprintf("seed=%d/offsets=%v", seed, offsets), func(t *testing.T) {
			t.Parallel()
			replicaRound(t, seed, offsets, true)
		})
	}
}

const replicas = 3

const week = 7 * 24 * time.Hour

// replicaOffsets are the host clocks of the three replicas, per round in
// turn: within the skew allowance (the configured 5m), and days beyond it.
var replicaOffsets = [][replicas]time.Duration{
	{-defaultSkew, 0, defaultSkew},
	{-week, 0, week},
	{week, -defaultSkew, -week},
}

type replicaRoot struct {
	b *backend
	f *fixture
	// contested are due tables a revive races the replicas for, and
	// reviveOut what that revive printed.
	contested []string
	revive    *proc
	reviveOut string
}

// replicaRound runs one round; with skewed, each replica gets
// REAPER_CLOCK_OFFSET (its offset, 0s included).
func replicaRound(t *testing.T, seed uint64, offsets [replicas]time.Duration, skewed bool) {
	rng := newRand(seed)
	roots := []*replicaRoot{{b: localBackend(t)}, {b: s3Backend(t, "tenant/db")}}
	cfg := map[string]any{}
	var cfgRoots []map[string]any
	for _, rr := range roots {
		rr.f = newFixture(rng, mix{kindDue: 16, kindNotDue: 2, kindLive: 3, kindOrphan: 2, kindHeld: 1, kindLink: 1}, [2]int{3, 25})
		rr.f.write(t, rr.b)
		for _, tb := range rr.f.tables {
			if tb.kind == kindDue && len(rr.contested) < 2 && rng.IntN(3) == 0 {
				rr.contested = append(rr.contested, tb.name)
			}
		}
		cfgRoots = append(cfgRoots, map[string]any{"uri": rr.b.uri, "storage_options": rr.b.opts})
	}
	audit := filepath.Join(t.TempDir(), "audit")
	cfg["roots"] = cfgRoots
	cfgPath := filepath.Join(t.TempDir(), "reaper.yaml")
	raw, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, raw, 0o600))

	args := append(purgeArgs(30*time.Second, defaultSkew), "--config", cfgPath, "--set", "audit.location="+audit)
	begin := time.Now()
	var procs []*proc
	for _, off := range offsets {
		var env []string
		if skewed {
			env = []string{"REAPER_CLOCK_OFFSET=" + off.String()}
		}
		procs = append(procs, startReaper(t, args, env, nil))
	}
	for _, rr := range roots {
		if len(rr.contested) > 0 {
			rr.revive = startReaper(t, append(append([]string{"revive"}, rr.b.rootArgs("")...), rr.contested...), nil, nil)
		}
	}
	results := make([]result, len(procs))
	for i, p := range procs {
		results[i] = p.wait(t)
	}
	var reviveOut []string
	for _, rr := range roots {
		if rr.revive != nil {
			r := rr.revive.wait(t)
			require.Contains(t, []int{0, 1}, r.code, "revive:\n%s", r)
			rr.reviveOut = string(r.stdout)
			reviveOut = append(reviveOut, rr.b.name+": "+strings.Join(strings.Split(strings.TrimSpace(rr.reviveOut), "\n"), "; "))
		}
	}
	end := time.Now()
	for i, r := range results {
		// The link tables fail every pass (not_a_table): exit 1.
		require.Equal(t, 1, r.code, "replica %d (clock %v):\n%s", i, offsets[i], r)
		for _, e := range report(t, r).Failed {
			link := false
			for _, rr := range roots {
				if tb := rr.f.byName[e.Name]; tb != nil && tb.kind == kindLink {
					link = true
				}
			}
			require.True(t, link, "replica %d (clock %v) failed %s: %s\n%s", i, offsets[i], e.Name, e.Error, r)
		}
	}

	rows := ledgerRows(t, audit)
	passes := map[string]time.Time{}
	purged := map[string]int{}
	actions := map[string]int{}
	kinds := map[string]kind{}
	for _, rr := range roots {
		for _, tb := range rr.f.tables {
			kinds[canonical(t, rr.b.uri)+" "+tb.name] = tb.kind
		}
	}
	for _, row := range rows {
		passes[row.PassID] = row.Started
		r, _, _ := strings.Cut(row.Reason, ":") // "<reason>: <detail>"
		reason := outcome.Reason(r)
		actions[row.Action+"/"+r]++
		k := kinds[row.Root+" "+row.Table]
		switch outcome.Action(row.Action) {
		case outcome.Failed:
			require.Equal(t, kindLink, k, "seed %d: failed row: %+v", seed, row)
			require.Equal(t, outcome.ReasonNotATable, reason, "seed %d: row %+v", seed, row)
		case outcome.Skipped:
			require.Contains(t, []outcome.Reason{outcome.ReasonLocked, outcome.ReasonNotDue}, reason, "seed %d: row %+v", seed, row)
			if reason == outcome.ReasonNotDue {
				require.Equal(t, kindNotDue, k, "seed %d: a due table judged not due (by a host's clock?): %+v", seed, row)
			}
		case outcome.Purged:
			require.True(t, k.purgeable(), "seed %d: %s (%s) purged: %+v", seed, row.Table, k, row)
			purged[row.Root+" "+row.Table]++
		}
	}
	require.Len(t, passes, replicas, "seed %d: one ledger file per replica pass", seed)
	// REAPER_CLOCK_OFFSET took effect: each replica's pass is dated by its
	// own shifted clock, and by nothing else.
	for i, off := range offsets {
		want, n := 0, 0
		for _, o := range offsets {
			if o == off {
				want++
			}
		}
		for _, started := range passes {
			if !started.Before(begin.Add(off-time.Second)) && !started.After(end.Add(off+time.Second)) {
				n++
			}
		}
		require.Equal(t, want, n, "seed %d: replica %d (clock %v): its pass should be dated by its clock; passes started %v", seed, i, off, passes)
	}
	for _, rr := range roots {
		snap := take(t, rr.b)
		where := fmt.Sprintf("seed %d, root %s", seed, rr.b.name)
		for _, name := range rr.contested {
			tb := rr.f.byName[name]
			s := stateOf(tb, snap)
			won := strings.Contains("\n"+rr.reviveOut, "\n"+name+": revived")
			if s.marker == markerAbsent && s.intact() {
				require.True(t, won, "%s: %s is whole without its marker, but its revive did not report it revived:\n%s", where, s, rr.reviveOut)
				rr.f.revived(tb)
			} else {
				require.False(t, won, "%s: the revive reported %s revived, but %s", where, name, s)
			}
		}
		checkSafe(t, rr.f, snap, where)
		ok, why := purgedAll(rr.f, snap)
		require.True(t, ok, "%s: a due table survived three replicas: %s", where, why)
		require.Empty(t, staleLeases(t, rr.b, defaultSkew), where)
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
	t.Logf("seed %d, clocks %v: %d ledger rows from %d passes: %s; revives: %s", seed, offsets, len(rows), len(passes), strings.Join(summary, " "),
		strings.Join(reviveOut, " | "))
}

// canonical is a root URI as the ledger records it.
func canonical(t testing.TB, uri string) string {
	loc, err := all.ParseLocation(uri)
	require.NoError(t, err)
	return loc.String()
}
