package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// retentionOn is baseConfig with version retention of versions older than
// an hour: every version of the LanceDB fixture but those it must keep.
func retentionOn() config.Config {
	c := baseConfig()
	c.Retention.Enabled = true
	c.Retention.OlderThan = config.Duration(time.Hour)
	return c
}

// retained maps "table" to "action/reason" of root i's version retention.
func retained(rep *Report, root int) map[string]string {
	out := map[string]string{}
	for _, d := range rep.Roots[root].Retention {
		out[d.Table] = string(d.Action) + "/" + string(d.Reason)
	}
	return out
}

// requireTableReads checks that every version the table lists reads and
// every file each references is there: retention left a whole table.
func requireTableReads(t *testing.T, s objstore.Store, name string) *lance.Table {
	t.Helper()
	tb, err := lance.ReadTable(context.Background(), s, lifecycle.TableDir(name))
	require.NoError(t, err)
	have := map[string]bool{}
	require.NoError(t, s.Walk(context.Background(), lifecycle.TableDir(name), func(objs []objstore.Object) error {
		for _, o := range objs {
			have[o.Key] = true
		}
		return nil
	}))
	for _, v := range tb.Versions {
		keys, _ := v.Refs()
		for _, k := range keys {
			require.True(t, have[lifecycle.TableDir(name)+k], "version %d references %s, deleted", v.Number, k)
		}
	}
	return tb
}

// A pass over a root with retention enabled purges its due tables, then
// removes the old versions of its live tables as Lance's cleanup would:
// the table still reads at every version it lists, the result is a
// decision of the outcome vocabulary in the report, the ledger and the
// metrics, and the next pass has nothing to do.
func TestPassRetainsLiveTables(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "old", 3, 1, 7*day)
		before := lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
		audit := backend.NewRoot(t).Open(t)
		reg := prometheus.NewRegistry()
		m := metrics.New(reg, metrics.Options{})

		w := f.worker(retentionOn(), 8*day)
		w.Ledger = testLedger(audit)
		w.Observer = Observers{f.rec, MetricsObserver{M: m}}
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "purged/due", byTable(rep, 0)["old"], "purges run as before")
		require.Equal(t, map[string]string{"events": "cleaned/old_versions"}, retained(rep, 0))
		d := rep.Roots[0].Retention[0]
		require.Positive(t, d.Versions)
		require.Positive(t, d.Objects)
		require.Positive(t, d.Bytes)
		require.Contains(t, d.Detail, "version retention: removed")
		require.Equal(t, outcome.ResultSuccess, rep.Result())
		tot := rep.Totals()
		require.Equal(t, 1, tot.Cleaned)
		require.Equal(t, d.Versions, tot.VersionsRemoved)
		require.Equal(t, 1, tot.Purged, "retention is not counted as a purge")

		tb := requireTableReads(t, f.store(0), "events")
		require.Less(t, len(tb.Versions), 6)
		after := f.keys(0, lifecycle.TableDir("events"))
		require.Len(t, after, len(before)-int(d.Objects), "deleted what it reports")
		require.Empty(t, f.keys(0, lifecycle.RetainKey("events")), "the record goes last")

		rows := ledgerRowsOf(t, audit)
		row := rows[rep.PassID+"/events"]
		require.Equal(t, "cleaned", row.Action)
		require.True(t, strings.HasPrefix(row.Reason, "old_versions: version retention: removed"), row.Reason)
		require.Equal(t, d.Objects, row.Objects)
		require.Equal(t, "purged", rows[rep.PassID+"/old"].Action)

		require.Equal(t, 1.0, counterValue(t, reg, "reaper_retention_tables_total", "cleaned"))
		require.Equal(t, float64(d.Versions), counterValue(t, reg, "reaper_retention_versions_removed_total", ""))
		require.Equal(t, float64(d.Objects), counterValue(t, reg, "reaper_retention_objects_deleted_total", ""))

		again, err := f.worker(retentionOn(), 8*day).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"events": "skipped/nothing_to_do"}, retained(again, 0))
		require.Equal(t, after, f.keys(0, lifecycle.TableDir("events")))
	})
}

// Retention is off unless switched on, deletes nothing in a dry run (it
// reports what it would remove), stops at a hold and at every form of
// pause, and a root's own setting overrides the top-level one.
func TestPassRetentionSwitches(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		cfg  func() config.Config
		put  string // a switch written before the pass
		want map[string]string
	}{
		{"off by default", baseConfig, "", map[string]string{}},
		{"dry run", func() config.Config { c := retentionOn(); c.DryRun = true; return c }, "",
			map[string]string{"events": "dry_run/old_versions"}},
		{"shadow rollout", func() config.Config { c := retentionOn(); c.Safety.DeletionsEnabled = &off; return c }, "",
			map[string]string{"events": "dry_run/old_versions"}},
		{"shadow rollout, by the old name", func() config.Config { c := retentionOn(); c.Safety.RetentionEnabled = &off; return c }, "",
			map[string]string{"events": "dry_run/old_versions"}},
		{"held", retentionOn, lifecycle.HoldKey("events"), map[string]string{"events": "held/held"}},
		{"paused by the root's switch", retentionOn, PauseKey, map[string]string{"events": "skipped/paused"}},
		{"paused by the configuration", func() config.Config { c := retentionOn(); c.Paused = true; return c }, "",
			map[string]string{"events": "skipped/paused"}},
		{"off for the root", func() config.Config {
			c := retentionOn()
			c.Roots = []config.Root{{URI: "x", Retention: config.RetentionOverride{Enabled: &off}}}
			return c
		}, "", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
			if tc.put != "" {
				_, err := f.store(0).Put(context.Background(), tc.put, []byte("audit"))
				require.NoError(t, err)
			}
			before := f.keys(0, "")
			cfg := tc.cfg()
			w := f.worker(cfg, 2*time.Hour)
			if len(cfg.Roots) == 1 {
				// The root's own retention section, on the fixture's root.
				own := []roots.Root{{URI: f.uris[0], Retention: cfg.Roots[0].Retention}}
				w.Roots = func(context.Context) ([]roots.Root, error) { return own, nil }
			}
			rep, err := w.Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, retained(rep, 0))
			require.Equal(t, before, f.keys(0, ""), "nothing deleted")
			if tc.want["events"] == "dry_run/old_versions" {
				d := rep.Roots[0].Retention[0]
				require.Positive(t, d.Versions)
				require.Positive(t, d.Objects, "what it would delete")
			}
		})
	}
}

// counterValue is the value of the named counter (of its series whose
// result label is result, when given).
func counterValue(t *testing.T, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if result == "" || (l.GetName() == "result" && l.GetValue() == result) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	require.Failf(t, "no such series", "%s{result=%q}", name, result)
	return 0
}

// Live tables are cleaned limits.table_concurrency at a time and reported
// by name; a shutdown starts no new table and says how many it left.
func TestPassRetentionConcurrencyAndDrain(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	for _, n := range []string{"c", "a", "b"} {
		lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(n))
	}
	cfg := retentionOn()
	cfg.Limits.TableConcurrency = 3
	rep, err := f.worker(cfg, 2*time.Hour).Pass(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, d := range rep.Roots[0].Retention {
		names = append(names, d.Table)
		require.Equal(t, "cleaned", string(d.Action), d.Table)
	}
	require.Equal(t, []string{"a", "b", "c"}, names)

	g := newFixture(t, objstoretest.Local, 1)
	for _, n := range []string{"a", "b", "c"} {
		lancetest.LanceDB(t, g.store(0), lifecycle.TableDir(n))
	}
	cfg.Limits.TableConcurrency = 1
	calls := 0
	// The pass asks once before the root, once before planning each of
	// the three tables, then once before running each: draining from the
	// sixth question on lets table a alone start.
	draining := func() bool { calls++; return calls > 5 }
	rep, err = g.worker(cfg, 2*time.Hour).Pass(context.Background(), draining)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "cleaned/old_versions"}, retained(rep, 0))
	require.Equal(t, 2, rep.Roots[0].RetentionNotVisited)
}

// A dry run that planned every live table of a root sets what retention
// would reclaim there (reaper_retention_reclaimable_*); a deleting pass
// sets what it left (TestPassRetentionPerRoot).
func TestPassRetentionDryRunSetsReclaimable(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.Options{})
	cfg := retentionOn()
	cfg.DryRun = true
	w := f.worker(cfg, 2*time.Hour)
	w.Observer = MetricsObserver{M: m}
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	d := rep.Roots[0].Retention[0]
	require.Equal(t, float64(d.Bytes), gaugeValue(t, reg, "reaper_retention_reclaimable_bytes"))
	require.Equal(t, float64(d.Versions), gaugeValue(t, reg, "reaper_retention_reclaimable_versions"))
}

// gaugeValue is the value of the named gauge's one series.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	require.Failf(t, "no such gauge", "%s", name)
	return 0
}

// rootLists counts the listings of a store's whole root.
type rootLists struct {
	objstore.Store
	n *atomic.Int64
}

func (s rootLists) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if prefix == "" {
		s.n.Add(1)
	}
	return s.Store.List(ctx, prefix, fn)
}

// A dry run plans each live table from the pass's own listing of the root,
// at its clock: the root is listed once whatever its number of tables.
func TestPassRetentionDryRunListsTheRootOnce(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	for _, n := range []string{"a", "b", "c"} {
		lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(n))
	}
	cfg := retentionOn()
	cfg.DryRun = true
	w := f.worker(cfg, 2*time.Hour)
	var lists atomic.Int64
	open := w.Open
	w.Open = func(ctx context.Context, r roots.Root) (objstore.Store, error) {
		s, err := open(ctx, r)
		return rootLists{Store: s, n: &lists}, err
	}
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "dry_run/old_versions", "b": "dry_run/old_versions", "c": "dry_run/old_versions"}, retained(rep, 0))
	require.Equal(t, int64(1), lists.Load(), "root listings")
}

// A live name the store holds but reaper refuses as a table name (a
// backslash: no LanceDB client writes one) is not one of the root's live
// tables: retention never visits it, nothing of it is touched, and the
// pass is not failed for it on every run.
func TestPassRetentionLeavesANameReaperRefuses(t *testing.T) {
	f := newFixture(t, objstoretest.Memory, 1)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(`we\ird`))
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	before := f.keys(0, lifecycle.TableDir(`we\ird`))
	rep, err := f.worker(retentionOn(), 2*time.Hour).Pass(context.Background(), nil)
	require.NoError(t, err)
	got := retained(rep, 0)
	require.Equal(t, "cleaned/old_versions", got["events"])
	require.NotContains(t, got, `we\ird`)
	require.Equal(t, outcome.ResultSuccess, rep.Result())
	require.Equal(t, before, f.keys(0, lifecycle.TableDir(`we\ird`)))
}

// Version retention counts toward limits.max_objects_per_pass with the
// purges: once the budget is spent a live table is not started (skipped,
// limit), in a dry run as in a deleting pass; a table already started is
// not split, so the first one goes past a budget smaller than itself.
func TestPassRetentionSpendsTheObjectBudget(t *testing.T) {
	for _, dry := range []bool{false, true} {
		t.Run(map[bool]string{false: "deleting", true: "dry run"}[dry], func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			for _, n := range []string{"a", "b", "c"} {
				lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(n))
			}
			cfg := retentionOn()
			cfg.Limits.TableConcurrency = 1
			cfg.Limits.MaxObjectsPerPass = 1
			cfg.DryRun = dry
			before := f.keys(0, "")
			rep, err := f.worker(cfg, 2*time.Hour).Pass(context.Background(), nil)
			require.NoError(t, err)
			first := map[bool]string{false: "cleaned/old_versions", true: "dry_run/old_versions"}[dry]
			require.Equal(t, map[string]string{"a": first, "b": "skipped/limit", "c": "skipped/limit"}, retained(rep, 0))
			require.Greater(t, rep.Roots[0].Retention[0].Objects, int64(1), "the table it started went past the budget")
			require.Contains(t, rep.Roots[0].Retention[1].Detail, "limits.max_objects_per_pass")
			if dry {
				require.Equal(t, before, f.keys(0, ""), "a dry run deletes nothing")
			}
		})
	}
}

// A table's version retention reports its progress as a purge does
// (OnProgress: its total once planned, each batch, a done event with what
// it deleted), marked as retention; a table with nothing to do reports
// nothing.
func TestPassRetentionReportsProgress(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	w := f.worker(retentionOn(), 2*time.Hour)
	var mu sync.Mutex
	var evs []Progress
	w.OnProgress = func(ev Progress) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	d := rep.Roots[0].Retention[0]
	require.Equal(t, outcome.Cleaned, d.Action)
	require.GreaterOrEqual(t, len(evs), 3, "total, a batch, done")
	for _, ev := range evs {
		require.True(t, ev.Retention)
		require.Equal(t, "events", ev.Table)
	}
	require.Equal(t, d.Objects, evs[0].TotalObjects, "the total comes first")
	last := evs[len(evs)-1]
	require.True(t, last.Done)
	require.Equal(t, d.Objects, last.Objects)
	require.Equal(t, d.Bytes, last.Bytes)

	evs = nil
	again, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"events": "skipped/nothing_to_do"}, retained(again, 0))
	require.Empty(t, evs, "nothing to do, nothing to show")
}
