package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// counters gathers reg's counters as "name{value of label}" -> value.
func counters(t *testing.T, reg *prometheus.Registry, label string) map[string]float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter() == nil {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[mf.GetName()+"{"+l.GetValue()+"}"] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// Every decision's reason is its metric label as it is: no mapping, no
// folding. Before the one vocabulary, paused was counted as limit and a
// live or unknown table as other.
func TestMetricsObserverUsesTheVocabulary(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fixture, c *config.Config)
		// tables limits the pass to these names (nil: all).
		tables []string
		want   map[string]float64
	}{
		{
			name:  "due, not due, short ttl, invalid marker",
			setup: func(_ *fixture, c *config.Config) { c.Safety.MinTTL = config.Duration(2 * day) },
			want: map[string]float64{
				"reaper_skipped_total{not_due}": 1, "reaper_skipped_total{short_ttl}": 1,
				"reaper_purge_failures_total{invalid_marker}": 1,
			},
		},
		{
			name:  "paused",
			setup: func(_ *fixture, c *config.Config) { c.Paused = true },
			want: map[string]float64{
				"reaper_skipped_total{not_due}": 1, "reaper_skipped_total{paused}": 2,
				"reaper_purge_failures_total{invalid_marker}": 1, "reaper_roots_refused_total{paused}": 1,
			},
		},
		{
			name:   "live and unknown names",
			tables: []string{"live", "nosuch"},
			want:   map[string]float64{"reaper_purge_failures_total{live}": 1, "reaper_purge_failures_total{not_found}": 1},
		},
		{
			name:  "blast radius",
			setup: func(_ *fixture, c *config.Config) { c.Safety.BlastRadiusMaxTables = 1 },
			want: map[string]float64{
				"reaper_skipped_total{not_due}": 1, "reaper_purge_failures_total{invalid_marker}": 1,
				"reaper_roots_refused_total{blast_radius}": 1,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			f.table(0, "short", 1, 1, day)
			f.table(0, "long", 1, 1, 3*day)
			f.table(0, "fresh", 1, 1, 30*day)
			f.table(0, "live", 1, 0, 0)
			_, err := f.store(0).Put(context.Background(), "bad.deleted", []byte("nope"))
			require.NoError(t, err)
			cfg := baseConfig()
			if tc.setup != nil {
				tc.setup(f, &cfg)
			}
			reg := prometheus.NewRegistry()
			w := f.worker(cfg, 4*day)
			w.Tables = tc.tables
			w.Observer = MetricsObserver{M: metrics.New(reg, metrics.Options{})}
			rep, err := w.Pass(context.Background(), nil)
			require.NoError(t, err)

			got := map[string]float64{}
			for k, v := range counters(t, reg, "reason") {
				if v != 0 {
					got[k] = v
				}
			}
			require.Equal(t, tc.want, got)
			// And each decision's reason is one of its label values.
			for d := range rep.Roots[0].All() {
				switch d.Action {
				case outcome.Skipped, outcome.Held:
					require.Contains(t, outcome.SkipReasons(), d.Reason, d.Table)
				case outcome.Failed:
					require.Contains(t, outcome.FailureReasons(), d.Reason, d.Table)
				}
			}
			results := counters(t, reg, "result")
			require.Equal(t, 1.0, results["reaper_passes_total{"+string(rep.Result())+"}"])
			leases := map[string]float64{}
			for d := range rep.Roots[0].All() {
				if d.Lease != "" {
					leases["reaper_lock_acquisitions_total{"+d.Lease+"}"]++
				}
			}
			for _, l := range outcome.Leases() {
				k := "reaper_lock_acquisitions_total{" + string(l) + "}"
				require.Equal(t, leases[k], results[k], k)
			}
		})
	}
}

// The ledger stores the decision's action and reason as they are, the
// reason followed by its detail.
func TestLedgerRows(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 1, 1, 3*day)
	f.table(0, "fresh", 1, 1, 30*day)
	_, err := f.store(0).Put(context.Background(), "bad.deleted", []byte("nope"))
	require.NoError(t, err)
	audit := memstore.New()
	w := f.worker(baseConfig(), 4*day)
	w.Ledger = NewLedger(audit, slog.New(slog.NewTextHandler(io.Discard, nil)), "v9", "host-a")
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)

	rows, err := ledger.Read(context.Background(), audit, f.now)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	byName := map[string]ledger.Row{}
	for _, r := range rows {
		byName[r.Table] = r
	}
	for d := range rep.Roots[0].All() {
		r := byName[d.Table]
		require.Equal(t, rep.PassID, r.PassID)
		require.Equal(t, string(d.Action), r.Action, d.Table)
		require.True(t, strings.HasPrefix(r.Reason, string(d.Reason)+": "), "%s: %q", d.Table, r.Reason)
		require.Equal(t, "v9", r.Version)
		require.Equal(t, "host-a", r.Host)
	}
	require.Equal(t, string(outcome.Purged), byName["old"].Action)
	require.Equal(t, string(outcome.Failed), byName["bad"].Action)
	require.NotNil(t, byName["fresh"].TTL)
}

// gauges gathers reg's gauge named name as "label=value,..." -> value.
func gauges(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(ls, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The backlog metrics say what is left after the pass, not what the plan
// saw: a pass that purged every due table leaves due, overdue and the oldest
// due marker at nothing (before, they kept the planned values until the
// next pass, and in every push and textfile). A dry run deletes nothing, so
// the backlog stays; a root no longer in the pass loses its series.
func TestBacklogMetricsAfterThePass(t *testing.T) {
	for _, perRoot := range []bool{true, false} {
		t.Run(fmt.Sprintf("per_root=%v", perRoot), func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 2)
			f.table(0, "old", 1, 1, day)
			f.table(0, "older", 1, 1, day)
			f.table(0, "fresh", 1, 1, 30*day)
			f.table(1, "gone", 1, 1, day)
			reg := prometheus.NewRegistry()
			m := metrics.New(reg, metrics.Options{PerRootLabels: perRoot})
			label := func(i int) string {
				if perRoot {
					return "root=" + f.uris[i] + ","
				}
				return "root=,"
			}

			dry := baseConfig()
			dry.DryRun = true
			w := f.worker(dry, 3*day)
			w.Observer = MetricsObserver{M: m}
			_, err := w.Pass(context.Background(), nil)
			require.NoError(t, err)
			due := gauges(t, reg, "reaper_tables")
			want := 3.0
			if perRoot {
				want = 2
			}
			require.Equal(t, want, due[label(0)+"state=due"], "a dry run leaves the backlog")
			require.Len(t, gauges(t, reg, "reaper_oldest_due_marker_timestamp_seconds"), map[bool]int{true: 2, false: 1}[perRoot])

			// Root 1 leaves the pass; root 0 is purged for real.
			w = f.worker(baseConfig(), 3*day)
			w.Observer = MetricsObserver{M: m}
			w.Roots = func(context.Context) ([]roots.Root, error) { return []roots.Root{{URI: f.uris[0]}}, nil }
			rep, err := w.Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, 2, rep.Totals().Purged)
			tables := gauges(t, reg, "reaper_tables")
			require.Equal(t, 0.0, tables[label(0)+"state=due"], "due after the pass: %v", tables)
			require.Equal(t, 0.0, tables[label(0)+"state=overdue"], "overdue after the pass: %v", tables)
			require.Equal(t, 1.0, tables[label(0)+"state=soft_deleted"], "soft_deleted after the pass: %v", tables)
			require.Empty(t, gauges(t, reg, "reaper_oldest_due_marker_timestamp_seconds"), "nothing is due after the pass")
			if perRoot {
				for k := range tables {
					require.NotContains(t, k, f.uris[1], "a root no longer in the pass keeps its series")
				}
			}
		})
	}
}

// The ledger says what failed: an invalid marker's row carries its error,
// and a root that cannot be opened gets a row (before: no error on the
// former, and a pass file with no row at all for the latter).
func TestLedgerRowsOfFailures(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 2)
	_, err := f.store(0).Put(context.Background(), "bad.deleted", []byte("nope"))
	require.NoError(t, err)
	audit := memstore.New()
	w := f.worker(baseConfig(), 4*day)
	open := w.Open
	w.Open = func(ctx context.Context, r roots.Root) (objstore.Store, error) {
		if r.URI == f.uris[1] {
			return nil, errors.New("no such bucket")
		}
		return open(ctx, r)
	}
	w.Ledger = NewLedger(audit, slog.New(slog.NewTextHandler(io.Discard, nil)), "v9", "host-a")
	_, err = w.Pass(context.Background(), nil)
	require.NoError(t, err)

	rows, err := ledger.Read(context.Background(), audit, f.now)
	require.NoError(t, err)
	byRoot := map[string]ledger.Row{}
	for _, r := range rows {
		byRoot[r.Root+"/"+r.Table] = r
	}
	bad := byRoot[f.uris[0]+"/bad"]
	require.Equal(t, string(outcome.Failed), bad.Action)
	require.True(t, strings.HasPrefix(bad.Error, "invalid_marker: "), "error %q", bad.Error)
	root := byRoot[f.uris[1]+"/"]
	require.Equal(t, string(outcome.Failed), root.Action, "rows: %v", rows)
	require.Equal(t, string(outcome.ReasonRootError), root.Reason)
	require.Contains(t, root.Error, "no such bucket")
}
