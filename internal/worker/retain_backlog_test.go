package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// seriesValue is the value of the named family's series whose labels
// include want.
func seriesValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for k, v := range want {
				match = match && have[k] == v
			}
			if !match {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	require.Failf(t, "no such series", "%s%v", name, want)
	return 0
}

// A pass over two roots says which root version retention cleaned: the
// "pass finished" line counts it beside the purges, each root's "root
// finished" line and the retention counters carry the root, and the
// reclaimable gauges are set by the dry run (what old versions cost) and
// by the deleting pass (what is left). The root whose live table had
// nothing to do gets one summary row in the audit ledger, not a row per
// table.
func TestPassRetentionPerRoot(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 2)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	lancetest.LanceDB(t, f.store(1), lifecycle.TableDir("quiet"))
	audit := objstoretest.Local.NewRoot(t).Open(t)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.Options{PerRootLabels: true})
	busy, idle := f.uris[0], f.uris[1]
	month := config.Duration(30 * day)

	pass := func(dryRun bool) (*Report, string) {
		cfg := retentionOn()
		cfg.DryRun = dryRun
		w := f.worker(cfg, 2*time.Hour)
		// The idle root keeps 30 days: nothing of its table is old enough.
		w.Roots = func(context.Context) ([]roots.Root, error) {
			return []roots.Root{{URI: busy}, {URI: idle, Retention: config.RetentionOverride{OlderThan: &month}}}, nil
		}
		var logs bytes.Buffer
		w.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		w.Observer = MetricsObserver{M: m}
		w.Ledger = testLedger(audit)
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		return rep, logs.String()
	}
	reclaimable := func(root string) (float64, float64) {
		return seriesValue(t, reg, "reaper_retention_reclaimable_bytes", map[string]string{"root": root}),
			seriesValue(t, reg, "reaper_retention_reclaimable_versions", map[string]string{"root": root})
	}

	dry, _ := pass(true)
	plan := dry.Roots[0].Retention[0]
	require.Equal(t, outcome.DryRun, plan.Action)
	require.Positive(t, plan.Bytes)
	b, v := reclaimable(busy)
	require.Equal(t, []float64{float64(plan.Bytes), float64(plan.Versions)}, []float64{b, v}, "what old versions cost, before")
	b, v = reclaimable(idle)
	require.Equal(t, []float64{0, 0}, []float64{b, v})

	rep, logs := pass(false)
	d := rep.Roots[0].Retention[0]
	require.Equal(t, outcome.Cleaned, d.Action)
	require.Equal(t, map[string]string{"quiet": "skipped/nothing_to_do"}, retained(rep, 1))
	b, v = reclaimable(busy)
	require.Equal(t, []float64{0, 0}, []float64{b, v}, "a deleting pass sets the backlog too: what it left")
	require.Equal(t, float64(d.Versions), seriesValue(t, reg, "reaper_retention_versions_removed_total", map[string]string{"root": busy}))
	require.Equal(t, float64(d.Bytes), seriesValue(t, reg, "reaper_retention_bytes_reclaimed_total", map[string]string{"root": busy}))
	require.Zero(t, seriesValue(t, reg, "reaper_retention_versions_removed_total", map[string]string{"root": idle}))
	require.Equal(t, 2.0, seriesValue(t, reg, "reaper_retention_tables_total", map[string]string{"root": idle, "result": "nothing_to_do"}), "the dry run's and the pass's")
	require.Equal(t, 1.0, seriesValue(t, reg, "reaper_retention_tables_total", map[string]string{"root": busy, "result": "cleaned"}))

	line := func(msg, root string) string {
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, `msg="`+msg+`"`) && (root == "" || strings.Contains(l, " root="+root+" ")) {
				return l
			}
		}
		require.Failf(t, "no log line", "%s %s in:\n%s", msg, root, logs)
		return ""
	}
	counts := func(versions int, objects, bytes int64) string {
		return " tables_cleaned=1 versions_removed=" + itoa(int64(versions)) + " retention_objects=" + itoa(objects) +
			" retention_bytes=" + itoa(bytes) + " retention_failed=0"
	}
	require.Contains(t, line("pass finished", ""), "purged=0 objects=0 bytes=0 skipped=0 failed=0"+counts(d.Versions, d.Objects, d.Bytes))
	require.Contains(t, line("root finished", busy), counts(d.Versions, d.Objects, d.Bytes)+" reclaimable_versions=0 reclaimable_bytes=0 duration_seconds=")
	require.Contains(t, line("root finished", idle), " tables_cleaned=0 versions_removed=0 retention_objects=0 retention_bytes=0 retention_failed=0 retention_nothing_to_do=1 reclaimable_versions=0 reclaimable_bytes=0")

	rows := ledgerRowsOf(t, audit)
	require.Equal(t, "cleaned", rows[rep.PassID+"/events"].Action)
	require.False(t, rows[rep.PassID+"/events"].Finished.Before(rows[rep.PassID+"/events"].Started), "a retention row says when it finished")
	require.False(t, d.Finished.IsZero())
	_, quiet := rows[rep.PassID+"/quiet"]
	require.False(t, quiet, "a table a pass only looked at has no row")
	sum := rows[rep.PassID+"/"]
	require.Equal(t, idle, sum.Root)
	require.Equal(t, "skipped", sum.Action)
	require.Equal(t, "nothing_to_do: version retention: 1 live table(s) with no version old enough to remove (no row each)", sum.Reason)
}

// The backlog is what the plans would still remove once the pass is over,
// and is known only where the pass planned every live table of the root.
func TestRetentionBacklog(t *testing.T) {
	planned := lifecycle.RetentionPlan{Result: lifecycle.RetentionPlanned}
	planned.Plan.Removed = []uint64{1, 2, 3}
	planned.Plan.Bytes = 300
	require.Equal(t, Backlog{Versions: 3, Bytes: 300}, backlogOf(planned, nil))
	require.Equal(t, Backlog{}, backlogOf(planned, objstore.ErrNotFound), "a plan that failed knows nothing")
	require.Equal(t, Backlog{}, backlogOf(lifecycle.RetentionPlan{Result: lifecycle.RetentionUnsupported}, nil))
	require.Equal(t, Backlog{Versions: 1, Bytes: 100}, Backlog{Versions: 3, Bytes: 300}.less(2, 200))
	require.Equal(t, Backlog{}, Backlog{Versions: 3, Bytes: 300}.less(4, 400), "a run that removed more (a record's files) leaves nothing")

	rr := &RootReport{Retention: []Retained{{Left: Backlog{Versions: 1, Bytes: 10}}, {Left: Backlog{Versions: 2, Bytes: 5}}}}
	_, ok := rr.RetentionBacklog()
	require.False(t, ok, "retention off")
	rr.retainOn = true
	_, ok = rr.RetentionBacklog()
	require.False(t, ok, "not planned: paused, refused, below the floor")
	rr.retentionPlanned = true
	b, ok := rr.RetentionBacklog()
	require.True(t, ok)
	require.Equal(t, Backlog{Versions: 3, Bytes: 15}, b)
	rr.RetentionNotVisited = 1
	_, ok = rr.RetentionBacklog()
	require.False(t, ok, "a shutdown left a table unvisited")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
