package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// byTableShard is cfg with the tables of every root split n ways, this
// replica being shard i.
func byTableShard(cfg config.Config, i, n int) config.Config {
	cfg.Shard = config.Shard{Index: i, Count: n, By: config.ShardByTable}
	return cfg
}

// A root's tables split over n replicas and reunited: each replica plans
// the whole root (its summary is the unsplit pass's), decides only the
// tables hashed to it, and the replicas' decisions together are the unsplit
// pass's, each table's in exactly one replica, for every n (1 is no split).
// The root is a fixed seed set of names of every kind: live, due, not due,
// orphan marker, invalid marker, held, busy.
func TestShareByTableSplitsAndReunitesItsTables(t *testing.T) {
	f := newFixture(t, objstoretest.Memory, 1)
	randomRoot(f, rand.New(rand.NewPCG(36, 4)), 240)
	cfg := baseConfig()
	cfg.DryRun = true
	whole, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
	require.NoError(t, err)
	want := byTable(whole, 0)
	require.Greater(t, len(want), 100)
	uri := f.uris[0]

	for _, n := range []int{1, 2, 3, 5, 8} {
		got := map[string]string{}
		in := map[string][]int{}
		for i := range n {
			rep, err := f.worker(byTableShard(cfg, i, n), 8*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Len(t, rep.Roots, 1, "every replica visits the root")
			rr := rep.Roots[0]
			require.Equal(t, whole.Roots[0].Plan, rr.Plan, "%d ways, replica %d: the whole root's plan", n, i)
			for d := range rr.All() {
				require.Equal(t, i, roots.TableOwner(uri, d.Table, n), "%d ways: replica %d decided %s", n, i, d.Table)
				got[d.Table] = string(d.Action) + "/" + string(d.Reason)
				in[d.Table] = append(in[d.Table], i)
			}
		}
		require.Equal(t, want, got, "%d ways: the replicas together decide as one pass", n)
		for table, replicas := range in {
			require.Len(t, replicas, 1, "%d ways: %s decided by replicas %v", n, table, replicas)
		}
	}
}

// Purging for real, each replica purges its share of the due tables: after
// every replica's pass each due table is gone, purged by exactly one, and
// the audit ledger holds one row per table over the replicas' files.
func TestShareByTablePurgesEachTableOnce(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	var due []string
	for i := range 30 {
		name := fmt.Sprintf("t%02d", i)
		switch i % 3 {
		case 0, 1:
			f.table(0, name, 2, 1, 7*day)
			due = append(due, name)
		default:
			f.table(0, name, 1, 0, 0)
		}
	}
	audit := objstoretest.Local.NewRoot(t).Open(t)
	const n = 3
	purgedBy := map[string][]int{}
	for i := range n {
		w := f.worker(byTableShard(baseConfig(), i, n), 8*day)
		w.Ledger = testLedger(audit)
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, outcome.ResultSuccess, rep.Result())
		for table, what := range byTable(rep, 0) {
			require.Equal(t, "purged/due", what, "replica %d: %s", i, table)
			require.Equal(t, i, roots.TableOwner(f.uris[0], table, n))
			purgedBy[table] = append(purgedBy[table], i)
		}
	}
	require.Len(t, purgedBy, len(due))
	for _, table := range due {
		require.Len(t, purgedBy[table], 1, "%s purged by replicas %v", table, purgedBy[table])
		require.Empty(t, f.keys(0, table+"."), "%s gone", table)
	}
	rows := map[string]int{}
	for _, r := range ledgerRowsOf(t, audit) {
		rows[r.Table]++
		require.Equal(t, "purged", r.Action)
	}
	require.Len(t, rows, len(due))
	for table, c := range rows {
		require.Equal(t, 1, c, "%s: ledger rows", table)
	}
}

// The blast radius counts the whole root in every replica: a mass drop is
// refused by each (its share decided refused, nothing deleted), where each
// share alone (a quarter of the due tables; a quarter of a root below
// blast_radius_min_tables) would have let it through. Confirmed, every
// replica purges its share.
func TestShareByTableBlastRadiusRefusesEveryReplica(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	var due []string
	for i := range 24 {
		name := fmt.Sprintf("t%02d", i)
		if i < 16 {
			f.table(0, name, 0, 1, 7*day)
			due = append(due, name)
		} else {
			f.table(0, name, 0, 0, 0)
		}
	}
	keys := len(f.keys(0, ""))
	const n = 4
	for _, tc := range []struct {
		name string
		set  func(*config.Safety)
	}{
		// 16 due: more than 10, where a share holds about 4.
		{"count", func(s *config.Safety) { s.BlastRadiusMaxTables = 10 }},
		// 16 of 24 due (67%): a share of about 6 tables is below 20, where
		// the percentage does not apply.
		{"percent", func(s *config.Safety) { s.BlastRadiusMaxPercent, s.BlastRadiusMinTables = 50, 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := map[string]int{}
			for i := range n {
				cfg := byTableShard(baseConfig(), i, n)
				tc.set(&cfg.Safety)
				rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
				require.NoError(t, err)
				rr := rep.Roots[0]
				require.Equal(t, outcome.ReasonBlastRadius, rr.Refused, "replica %d", i)
				for d := range rr.All() {
					require.Equal(t, "refused/blast_radius", string(d.Action)+"/"+string(d.Reason), "replica %d: %s", i, d.Table)
					require.Equal(t, i, roots.TableOwner(f.uris[0], d.Table, n))
					refused[d.Table]++
				}
			}
			require.Len(t, refused, len(due), "every due table refused, by its replica")
			for table, c := range refused {
				require.Equal(t, 1, c, table)
			}
			require.Len(t, f.keys(0, ""), keys, "nothing deleted")
		})
	}
	t.Run("confirmed", func(t *testing.T) {
		purged := 0
		for i := range n {
			cfg := byTableShard(baseConfig(), i, n)
			cfg.Safety.BlastRadiusMaxTables, cfg.Safety.ConfirmBlastRadius = 10, true
			rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Empty(t, rep.Roots[0].Refused)
			purged += rep.Totals().Purged
		}
		require.Equal(t, len(due), purged)
	})
}

// A pass of named tables (Worker.Tables) split by table: each named table
// is decided by its replica alone, a live or unknown name too.
func TestShareByTableNamedTables(t *testing.T) {
	f := newFixture(t, objstoretest.Memory, 1)
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("t%02d", i)
		f.table(0, name, 1, 1, 7*day)
		names = append(names, name)
	}
	f.table(0, "live", 1, 0, 0)
	f.table(0, "other", 1, 1, 7*day) // not named: left alone
	names = append(names, "live", "unknown")
	want := map[string]string{"live": "failed/live", "unknown": "failed/not_found"}
	for _, name := range names[:12] {
		want[name] = "dry_run/due"
	}
	const n = 3
	got := map[string]string{}
	for i := range n {
		cfg := byTableShard(baseConfig(), i, n)
		cfg.DryRun = true
		w := f.worker(cfg, 8*day)
		w.Tables = names
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		for table, what := range byTable(rep, 0) {
			_, twice := got[table]
			require.False(t, twice, "%s decided twice", table)
			require.Equal(t, i, roots.TableOwner(f.uris[0], table, n), "replica %d decided %s", i, table)
			got[table] = what
		}
	}
	require.Equal(t, want, got)
}

// Version retention split by table: each replica cleans its share of the
// live tables, every table is cleaned once over the replicas and still
// reads at every version it lists.
func TestShareByTableRetainsEachTableOnce(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	var live []string
	for i := range 6 {
		name := fmt.Sprintf("events%d", i)
		lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(name))
		live = append(live, name)
	}
	const n = 2
	cleanedBy := map[string][]int{}
	for i := range n {
		rep, err := f.worker(byTableShard(retentionOn(), i, n), 8*day).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, outcome.ResultSuccess, rep.Result())
		require.Zero(t, rep.Roots[0].RetentionNotVisited)
		for table, what := range retained(rep, 0) {
			require.Equal(t, "cleaned/old_versions", what, "replica %d: %s", i, table)
			require.Equal(t, i, roots.TableOwner(f.uris[0], table, n))
			cleanedBy[table] = append(cleanedBy[table], i)
		}
	}
	require.Len(t, cleanedBy, len(live))
	for _, table := range live {
		require.Len(t, cleanedBy[table], 1, "%s cleaned by replicas %v", table, cleanedBy[table])
		requireTableReads(t, f.store(0), table)
	}
}

// Two replicas whose settings disagree (a rollout from shard.by root to
// table: one replica takes the whole root, the other its share of the
// tables) run at once: the table leases let each table be purged once.
func TestShareByTableMidRolloutPurgesOnce(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	var due []string
	for i := range 16 {
		name := fmt.Sprintf("t%02d", i)
		f.table(0, name, 8, 1, 7*day)
		due = append(due, name)
	}
	byRoot := f.worker(baseConfig(), 8*day)
	byRoot.Owner = "replica/root"
	share := f.worker(byTableShard(baseConfig(), 0, 2), 8*day)
	share.Owner = "replica/table-0"
	a, b := passAsync(t, byRoot), passAsync(t, share)
	purged := map[string]int{}
	for _, rep := range []*Report{<-a, <-b} {
		for d := range rep.Roots[0].All() {
			require.NotEqual(t, outcome.Failed, d.Action, "%s: %s", d.Table, d.Detail)
			if d.Action == outcome.Purged {
				purged[d.Table]++
			}
		}
	}
	for _, table := range due {
		require.Equal(t, 1, purged[table], "%s purged %d times", table, purged[table])
		require.Empty(t, f.keys(0, table+"."), "%s gone", table)
	}
}

// The backlog gauges of a replica are the whole root's, less what it
// purged itself: equal in every replica as planned, so a dashboard takes
// their max (deploy/prometheus), never their sum.
func TestShareByTableReportsTheWholeBacklog(t *testing.T) {
	f := newFixture(t, objstoretest.Memory, 1)
	for i := range 10 {
		f.table(0, fmt.Sprintf("t%02d", i), 1, 1, 7*day)
	}
	f.table(0, "later", 1, 1, 30*day)
	const n = 2
	for i := range n {
		f.rec = &recorder{}
		cfg := byTableShard(baseConfig(), i, n)
		cfg.DryRun = true
		_, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Len(t, f.rec.planned, 1)
		p := f.rec.planned[0]
		require.Equal(t, 11, p.Tables, "replica %d", i)
		require.Equal(t, 10, p.Due, "replica %d", i)
		require.False(t, p.OldestDue.IsZero())
		require.WithinDuration(t, f.now.Add(7*day), p.OldestDue, time.Minute)
	}
}
