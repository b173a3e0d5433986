package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/stretchr/testify/require"
)

// The alert tests evaluate the rules the way Prometheus does — recording
// rules every minute into new series, then each alert's expression every
// minute, firing once it has held for its `for` — with Prometheus's own
// PromQL engine over series kept in memory.

const (
	scrape   = 30 * time.Second
	evalStep = time.Minute
	window   = 8 * time.Hour // longer than the longest `for` (6h)
	passes   = 10 * time.Minute
)

var t0 = time.Unix(1_800_000_000, 0).UTC()

// fsample is one float sample.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// memStorage is a storage.Queryable over series held in memory.
type memStorage struct {
	series []storage.Series
}

func (m *memStorage) add(lset labels.Labels, samples []chunks.Sample) {
	m.series = append(m.series, storage.NewListSeries(lset, samples))
}

func (m *memStorage) Querier(int64, int64) (storage.Querier, error) { return memQuerier{m}, nil }

type memQuerier struct{ m *memStorage }

func (q memQuerier) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, s := range q.m.series {
		ok := true
		for _, m := range ms {
			ok = ok && m.Matches(s.Labels().Get(m.Name))
		}
		if ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &sliceSet{series: out, i: -1}
}

func (q memQuerier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q memQuerier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q memQuerier) Close() error { return nil }

type sliceSet struct {
	series []storage.Series
	i      int
}

func (s *sliceSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *sliceSet) At() storage.Series                { return s.series[s.i] }
func (s *sliceSet) Err() error                        { return nil }
func (s *sliceSet) Warnings() annotations.Annotations { return nil }

// gen is a series' value at an offset into the window; false means no sample.
type gen func(at time.Duration) (float64, bool)

func constant(v float64) gen { return func(time.Duration) (float64, bool) { return v, true } }

// perPass counts n per pass (a pass every 10 minutes).
func perPass(n float64) gen {
	return func(at time.Duration) (float64, bool) { return n * float64(at/passes), true }
}

// lastSuccess is the end of the latest pass, as a Unix time.
func lastSuccess(at time.Duration) (float64, bool) {
	return float64(t0.Add(at.Truncate(passes)).Unix()), true
}

// unixAt is a fixed Unix time, offset from the window's start.
func unixAt(off time.Duration) gen {
	return func(time.Duration) (float64, bool) { return float64(t0.Add(off).Unix()), true }
}

// after switches from a to b at offset from.
func after(from time.Duration, a, b gen) gen {
	return func(at time.Duration) (float64, bool) {
		if at < from {
			return a(at)
		}
		return b(at)
	}
}

// scenario is a set of scraped series: "metric{labels}" to its values.
type scenario map[string]gen

// healthy is a reaper daemon doing its job: a successful pass every 10
// minutes, purging a table each time, nothing overdue, nothing failing.
func healthy() scenario {
	const l = `namespace="lance", job="reaper", instance="10.0.0.7:9090"`
	const root = `root="/data/lancedb"`
	s := scenario{
		`reaper_passes_total{` + l + `, result="success"}`:                                     perPass(1),
		`reaper_last_success_timestamp_seconds{` + l + `}`:                                     lastSuccess,
		`reaper_tables_purged_total{` + l + `}`:                                                perPass(1),
		`reaper_bytes_reclaimed_total{` + l + `}`:                                              perPass(1 << 30),
		`reaper_lock_acquisitions_total{` + l + `, result="acquired"}`:                         perPass(1),
		`reaper_lock_acquisitions_total{` + l + `, result="contended"}`:                        constant(0),
		`reaper_purge_conflicts_total{` + l + `}`:                                              constant(0),
		`reaper_objstore_requests_total{` + l + `, op="delete_batch", code="ok"}`:              perPass(3),
		`reaper_objstore_requests_total{` + l + `, op="delete_batch", code="error"}`:           constant(0),
		`reaper_s3_http_requests_total{` + l + `, operation="DeleteObjects", code="200"}`:      perPass(3),
		`reaper_tables{` + l + `, ` + root + `, state="live"}`:                                 constant(40),
		`reaper_tables{` + l + `, ` + root + `, state="soft_deleted"}`:                         constant(2),
		`reaper_tables{` + l + `, ` + root + `, state="overdue"}`:                              constant(0),
		`reaper_oldest_due_marker_timestamp_seconds{` + l + `, ` + root + `}`:                  func(at time.Duration) (float64, bool) { return float64(t0.Add(at).Unix() - 300), true },
		`reaper_roots_refused_total{` + l + `, ` + root + `, reason="blast_radius"}`:           constant(0),
		`reaper_roots_refused_total{` + l + `, ` + root + `, reason="paused"}`:                 constant(0),
		`reaper_purge_failures_total{` + l + `, reason="invalid_marker"}`:                      constant(0),
		`reaper_purge_failures_total{` + l + `, reason="io"}`:                                  constant(0),
		`reaper_skipped_total{` + l + `, reason="not_due"}`:                                    perPass(2),
		`reaper_objstore_requests_total{` + l + `, op="list", code="ok"}`:                      perPass(1),
		`reaper_s3_http_requests_total{` + l + `, operation="ListObjectsV2", code="200"}`:      perPass(1),
		`reaper_objstore_requests_total{` + l + `, op="delete_if_match", code="precondition"}`: constant(0),
		`reaper_s3_http_requests_total{` + l + `, operation="DeleteObjects", code="503"}`:      constant(0),
		`reaper_lock_acquisitions_total{` + l + `, result="error"}`:                            constant(0),
		`reaper_passes_total{` + l + `, result="partial"}`:                                     constant(0),
		`reaper_purge_failures_total{` + l + `, reason="lease_lost"}`:                          constant(0),
		`reaper_objstore_requests_total{` + l + `, op="get", code="not_found"}`:                perPass(2),
		`reaper_tables{` + l + `, ` + root + `, state="due"}`:                                  constant(1),
		`reaper_objstore_requests_total{` + l + `, op="walk", code="ok"}`:                      perPass(1),
		`reaper_s3_http_requests_total{` + l + `, operation="GetObject", code="404"}`:          perPass(2),
		`reaper_ledger_write_failures_total{` + l + `}`:                                        constant(0),
		// Version retention on: each pass cleans what became old since the
		// last one, and leaves nothing.
		`reaper_retention_tables_total{` + l + `, ` + root + `, result="cleaned"}`: perPass(1),
		`reaper_retention_tables_total{` + l + `, ` + root + `, result="dry_run"}`: constant(0),
		`reaper_retention_reclaimable_bytes{` + l + `, ` + root + `}`:              constant(0),
	}
	return s
}

// with returns a copy of s with series replaced or added.
func (s scenario) with(changes scenario) scenario {
	out := maps.Clone(s)
	maps.Copy(out, changes)
	return out
}

// load turns a scenario into scraped samples, checking that each series
// is one reaper really exports, with its labels.
func load(t *testing.T, e exported, s scenario, window time.Duration) *memStorage {
	t.Helper()
	m := &memStorage{}
	c := newChecker(e)
	for desc, g := range s {
		lset, err := promParser.ParseMetric(desc)
		require.NoError(t, err, desc)
		// The series is real: its name, label names and (closed) values.
		_, err = c.check(desc)
		require.NoError(t, err, "scenario series %s", desc)
		var samples []chunks.Sample
		for at := time.Duration(0); at <= window; at += scrape {
			if v, ok := g(at); ok {
				samples = append(samples, fsample{t: t0.Add(at).UnixMilli(), f: v})
			}
		}
		m.add(lset, samples)
	}
	return m
}

// firing evaluates the rules over the scenario and returns the alerts that
// fire at the end of the window, as "Name{labels}".
func firing(t *testing.T, e exported, s scenario) []string {
	t.Helper()
	return firingOver(t, e, s, window)
}

// firingOver is firing over a window of another length: an alert that
// compares with a day ago needs more than a day.
func firingOver(t *testing.T, e exported, s scenario, window time.Duration) []string {
	t.Helper()
	st := load(t, e, s, window)
	eng := promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: promParser,
	})
	ctx := context.Background()
	rangeEval := func(expr string, start time.Time) promql.Matrix {
		q, err := eng.NewRangeQuery(ctx, st, nil, expr, start, t0.Add(window), evalStep)
		require.NoError(t, err, expr)
		defer q.Close()
		res := q.Exec(ctx)
		require.NoError(t, res.Err, expr)
		m, err := res.Matrix()
		require.NoError(t, err, expr)
		return m
	}
	var out []string
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			expr := r.Expr.String()
			if r.Record != "" {
				for _, series := range rangeEval(expr, t0) {
					b := labels.NewBuilder(series.Metric)
					b.Set(labels.MetricName, r.Record)
					samples := make([]chunks.Sample, 0, len(series.Floats))
					for _, p := range series.Floats {
						samples = append(samples, fsample{t: p.T, f: p.F})
					}
					st.add(b.Labels(), samples)
				}
				continue
			}
			hold := time.Duration(0)
			if r.For != nil {
				d, err := time.ParseDuration(string(*r.For))
				require.NoError(t, err)
				hold = d
			}
			from := t0.Add(window - hold)
			steps := int(hold/evalStep) + 1
			for _, series := range rangeEval(expr, from) {
				// Active at every evaluation of the last `for`: firing.
				if len(series.Floats) == steps {
					out = append(out, r.Alert+series.Metric.String())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func alertNames(fired []string) []string {
	var names []string
	for _, f := range fired {
		n, _, _ := strings.Cut(f, "{")
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// TestHealthyReaperRaisesNoAlert: a reaper that passes every 10 minutes and
// keeps up raises nothing.
func TestHealthyReaperRaisesNoAlert(t *testing.T) {
	require.Empty(t, firing(t, realMetrics(t), healthy()))
}

// TestAlertsFire: each failure raises its alert, with the labels an
// operator needs.
func TestAlertsFire(t *testing.T) {
	e := realMetrics(t)
	const l = `namespace="lance", job="reaper", instance="10.0.0.7:9090"`
	const root = `root="/data/lancedb"`
	cases := []struct {
		alert  string
		labels string // a substring of the fired alert's labels
		s      scenario
	}{
		{"ReaperNoRecentSuccess", `job="reaper"`, healthy().with(scenario{
			// Passes stop succeeding three hours before the end.
			`reaper_last_success_timestamp_seconds{` + l + `}`: after(window-3*time.Hour, lastSuccess, unixAt(window-3*time.Hour)),
			`reaper_passes_total{` + l + `, result="partial"}`: after(window-3*time.Hour, constant(0), perPass(1)),
		})},
		{"ReaperNoRecentSuccess", `namespace="lance"`, healthy().with(scenario{
			// A new process that never finished a pass (the gauge starts at 0).
			`reaper_last_success_timestamp_seconds{` + l + `}`: constant(0),
		})},
		{"ReaperMetricsAbsent", ``, scenario{
			// Metrics arrived, then stopped an hour before the end.
			`reaper_passes_total{` + l + `, result="success"}`: func(at time.Duration) (float64, bool) {
				return float64(at / passes), at < window-time.Hour
			},
		}},
		{"ReaperTablesOverdue", `root="/data/lancedb"`, healthy().with(scenario{
			`reaper_tables{` + l + `, ` + root + `, state="overdue"}`: after(window-time.Hour, constant(0), constant(3)),
		})},
		{"ReaperPurgeLagging", `root="/data/lancedb"`, healthy().with(scenario{
			`reaper_oldest_due_marker_timestamp_seconds{` + l + `, ` + root + `}`: unixAt(-2 * time.Hour),
		})},
		{"ReaperPurgeFailures", `reason="invalid_marker"`, healthy().with(scenario{
			`reaper_purge_failures_total{` + l + `, reason="invalid_marker"}`: perPass(1),
		})},
		{"ReaperLedgerWriteFailures", `instance="10.0.0.7:9090"`, healthy().with(scenario{
			// Writes fail from an hour before the end, one per pass.
			`reaper_ledger_write_failures_total{` + l + `}`: after(window-time.Hour, constant(0), func(at time.Duration) (float64, bool) {
				return float64((at - (window - time.Hour)) / passes), true
			}),
		})},
		{"ReaperRetentionFailures", `job="reaper"`, healthy().with(scenario{
			`reaper_retention_tables_total{` + l + `, result="failed"}`: perPass(1),
		})},
		{"ReaperPurgeConflicts", `job="reaper"`, healthy().with(scenario{
			`reaper_purge_conflicts_total{` + l + `}`: perPass(1),
		})},
		{"ReaperRootRefused", `reason="blast_radius"`, healthy().with(scenario{
			`reaper_roots_refused_total{` + l + `, ` + root + `, reason="blast_radius"}`: after(window-time.Hour, constant(0), perPass(1)),
		})},
		{"ReaperPaused", `reason="paused"`, healthy().with(scenario{
			`reaper_roots_refused_total{` + l + `, ` + root + `, reason="paused"}`: perPass(1),
		})},
		{"ReaperLockContention", `job="reaper"`, healthy().with(scenario{
			`reaper_lock_acquisitions_total{` + l + `, result="contended"}`: perPass(3),
		})},
		{"ReaperObjectStoreErrors", `op="delete_batch"`, healthy().with(scenario{
			`reaper_objstore_requests_total{` + l + `, op="delete_batch", code="error"}`: perPass(1),
		})},
		{"ReaperS3Throttled", `job="reaper"`, healthy().with(scenario{
			`reaper_s3_http_requests_total{` + l + `, operation="DeleteObjects", code="503"}`: perPass(5),
		})},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.alert, func(t *testing.T) {
			fired := firing(t, e, tc.s)
			var match []string
			for _, f := range fired {
				if strings.HasPrefix(f, tc.alert+"{") && strings.Contains(f, tc.labels) {
					match = append(match, f)
				}
			}
			require.NotEmpty(t, match, "%s with %s did not fire; fired: %v", tc.alert, tc.labels, fired)
			covered[tc.alert] = true
		})
	}
	t.Run("ReaperRetentionBacklogNotFalling", func(t *testing.T) {
		// It compares with a day ago: a window of more than a day.
		fired := firingOver(t, e, retentionStuck(), 26*time.Hour)
		require.Contains(t, fired, `ReaperRetentionBacklogNotFalling{instance="10.0.0.7:9090", job="reaper", namespace="lance", root="/data/lancedb"}`)
		covered["ReaperRetentionBacklogNotFalling"] = true
	})
	// Every alert has a case.
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				require.True(t, covered[r.Alert], "alert %s has no failing scenario", r.Alert)
			}
		}
	}
}

// TestAlertsWaitForTheirFor: a failure shorter than an alert's `for` does
// not page (here: one refused pass five minutes before the end).
// TestFreshInstallRaisesNoAlert: a fresh install whose CronJob pushes its
// metrics nowhere (the default) has no reaper series at all; before the
// gate, ReaperMetricsAbsent fired on it.
func TestFreshInstallRaisesNoAlert(t *testing.T) {
	require.Empty(t, firing(t, realMetrics(t), scenario{}))
}

func TestAlertsWaitForTheirFor(t *testing.T) {
	const l = `namespace="lance", job="reaper", instance="10.0.0.7:9090"`
	fired := firing(t, realMetrics(t), healthy().with(scenario{
		`reaper_roots_refused_total{` + l + `, root="/data/lancedb", reason="blast_radius"}`: after(window-5*time.Minute, constant(0), constant(1)),
	}))
	require.NotContains(t, alertNames(fired), "ReaperRootRefused", fmt.Sprint(fired))
}

// retentionStuck is a daemon whose version retention leaves 5 GiB of old
// versions every pass, a day long.
func retentionStuck() scenario {
	const l = `namespace="lance", job="reaper", instance="10.0.0.7:9090"`
	return healthy().with(scenario{
		`reaper_retention_reclaimable_bytes{` + l + `, root="/data/lancedb"}`: constant(5 << 30),
	})
}

// TestRetentionBacklogAlert: a backlog that stays, a day long, fires; one
// that reaches zero after passes, one that falls (a limit spreads a big
// backlog over days), a dry run's (it deletes nothing by design) and one
// younger than a day do not.
func TestRetentionBacklogAlert(t *testing.T) {
	e := realMetrics(t)
	const l = `namespace="lance", job="reaper", instance="10.0.0.7:9090"`
	const root = `root="/data/lancedb"`
	const name = "ReaperRetentionBacklogNotFalling"
	const day = 26 * time.Hour
	require.Contains(t, alertNames(firingOver(t, e, retentionStuck(), day)), name)
	for what, s := range map[string]scenario{
		"healthy": healthy(),
		"some passes leave some": healthy().with(scenario{
			`reaper_retention_reclaimable_bytes{` + l + `, ` + root + `}`: func(at time.Duration) (float64, bool) {
				return float64((int(at/passes) % 3) << 20), true
			},
		}),
		"falling": healthy().with(scenario{
			`reaper_retention_reclaimable_bytes{` + l + `, ` + root + `}`: func(at time.Duration) (float64, bool) {
				return float64(100<<30 - int64(at/passes)*(200<<20)), true
			},
		}),
		"dry run": retentionStuck().with(scenario{
			`reaper_retention_tables_total{` + l + `, ` + root + `, result="dry_run"}`: perPass(1),
			`reaper_retention_tables_total{` + l + `, ` + root + `, result="cleaned"}`: constant(0),
		}),
	} {
		require.NotContains(t, alertNames(firingOver(t, e, s, day)), name, what)
	}
	require.NotContains(t, alertNames(firing(t, e, retentionStuck())), name, "less than a day of it")
}
