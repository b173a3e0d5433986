package metrics

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	s3op "github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// exercise touches every metric once, so lint sees all of them.
func exercise(m *Metrics) {
	m.PassFinished(outcome.ResultSuccess, 90*time.Second, time.Unix(1700000000, 0))
	m.TablePurged()
	m.Deleted(3, 300)
	m.PurgeFailed(outcome.ReasonIO)
	m.PurgeConflict()
	m.LockAcquisition(outcome.LeaseAcquired)
	m.RootRefused("s3://bucket/a", outcome.ReasonPaused)
	m.Skipped(outcome.ReasonNotDue, 2)
	m.LedgerWriteFailed(1)
	m.SetRootTables("s3://bucket/a", map[string]int{StateLive: 4, StateDue: 1})
	m.SetOldestDueMarker("s3://bucket/a", time.Unix(1600000000, 0))
	m.SetReclaimable("s3://bucket/a", Reclaimable{Bytes: 10, Versions: 2})
	m.Retained("s3://bucket/a", string(outcome.Cleaned), 2, 5, 500)
	m.s3Requests.WithLabelValues(s3op.OpGetObject, "200").Inc()
	m.storeHTTPRequests.WithLabelValues("s3", s3op.OpGetObject, "200").Inc()
}

// The package doc lists every metric, and only those: a metric is declared
// in newMetrics and nowhere else, so the list is what is checked.
func TestPackageDocListsEveryMetric(t *testing.T) {
	src, err := os.ReadFile("metrics.go")
	require.NoError(t, err)
	var documented []string
	for _, line := range strings.Split(string(src), "\n") {
		if name, ok := strings.CutPrefix(line, "//\t"); ok {
			documented = append(documented, namespace+"_"+strings.FieldsFunc(name, func(r rune) bool { return r == '{' || r == ' ' })[0])
		}
	}
	var declared []string
	for _, c := range New(nil, Options{}).Collectors() {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		d := (<-ch).String()
		_, after, _ := strings.Cut(d, `fqName: "`)
		name, _, _ := strings.Cut(after, `"`)
		declared = append(declared, name)
	}
	slices.Sort(documented)
	slices.Sort(declared)
	require.Equal(t, declared, documented, "metrics.go's package doc against the metrics newMetrics declares")
}

func TestLintClean(t *testing.T) {
	t.Parallel()
	for _, perRoot := range []bool{false, true} {
		reg := prometheus.NewPedanticRegistry()
		m := New(reg, Options{PerRootLabels: perRoot})
		exercise(m)
		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		require.Empty(t, problems, "perRoot=%t", perRoot)
		mfs, err := reg.Gather()
		require.NoError(t, err)
		require.Len(t, mfs, len(m.Collectors()), "every metric gathered")
		for _, mf := range mfs {
			require.Regexp(t, `^reaper_`, mf.GetName())
		}
	}
}

func TestPrecreatedAtZero(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry(), Options{})
	require.Equal(t, len(outcome.Results()), testutil.CollectAndCount(m.passes))
	require.Equal(t, len(outcome.FailureReasons()), testutil.CollectAndCount(m.purgeFailures))
	require.Equal(t, 3, testutil.CollectAndCount(m.lockAcquisition))
	require.Equal(t, len(outcome.SkipReasons()), testutil.CollectAndCount(m.skipped))
	require.Equal(t, 3, testutil.CollectAndCount(m.rootsRefused))
	require.Equal(t, 7, testutil.CollectAndCount(m.tables))
	require.Equal(t, 10*5, testutil.CollectAndCount(m.storeRequests))
	require.Equal(t, 10, testutil.CollectAndCount(m.storeDuration))
	require.Equal(t, 0, testutil.CollectAndCount(m.oldestDue), "no due marker, no series")
	for _, g := range []prometheus.Collector{m.reclaim.bytes, m.reclaim.versions} {
		require.Equal(t, 0, testutil.CollectAndCount(g), "no retention plan, no series: zero would read as nothing to reclaim")
	}
	require.Equal(t, 1, testutil.CollectAndCount(m.ledgerFailures), "a lost audit record shows from the first scrape")
	require.Zero(t, testutil.ToFloat64(m.ledgerFailures))
	require.Zero(t, testutil.ToFloat64(m.storeRequests.WithLabelValues(OpDeleteBatch, CodeError)))

	perRoot := New(prometheus.NewRegistry(), Options{PerRootLabels: true})
	require.Equal(t, 0, testutil.CollectAndCount(perRoot.tables), "roots appear when reported")
	require.Equal(t, 0, testutil.CollectAndCount(perRoot.rootsRefused))
	require.Equal(t, len(RetentionResults()), testutil.CollectAndCount(m.retention.tables))
	require.Equal(t, 0, testutil.CollectAndCount(perRoot.retention.tables), "roots appear when reported")
}

// Version retention's counters carry the root, as reaper_tables does: a
// pass over two roots shows which one retention cleaned, every series of a
// root exists from its first report, and without per-root labels the
// counts add up under root "".
func TestRetentionPerRoot(t *testing.T) {
	t.Parallel()
	for _, perRoot := range []bool{true, false} {
		m := New(prometheus.NewPedanticRegistry(), Options{PerRootLabels: perRoot})
		m.Retained("s3://b/a", string(outcome.Cleaned), 3, 5, 500)
		m.Retained("s3://b/a", string(outcome.Cleaned), 2, 4, 400)
		m.Retained("s3://b/b", string(outcome.ReasonNothingToDo), 0, 0, 0)
		a, b := m.RootLabel("s3://b/a"), m.RootLabel("s3://b/b")
		r := m.retention
		if perRoot {
			require.Equal(t, []float64{5, 9, 900, 2}, []float64{testutil.ToFloat64(r.versions.WithLabelValues(a)),
				testutil.ToFloat64(r.objects.WithLabelValues(a)), testutil.ToFloat64(r.bytes.WithLabelValues(a)),
				testutil.ToFloat64(r.tables.WithLabelValues(a, string(outcome.Cleaned)))})
			require.Equal(t, []float64{0, 0, 0, 1}, []float64{testutil.ToFloat64(r.versions.WithLabelValues(b)),
				testutil.ToFloat64(r.objects.WithLabelValues(b)), testutil.ToFloat64(r.bytes.WithLabelValues(b)),
				testutil.ToFloat64(r.tables.WithLabelValues(b, string(outcome.ReasonNothingToDo)))}, "a root with nothing removed has its series")
			require.Equal(t, 2*len(RetentionResults()), testutil.CollectAndCount(r.tables), "every result of every root reported")
			require.Equal(t, 2, testutil.CollectAndCount(r.versions))
			continue
		}
		require.Equal(t, AllRoots, a)
		require.Equal(t, []float64{5, 9, 900, 2, 1}, []float64{testutil.ToFloat64(r.versions.WithLabelValues(a)),
			testutil.ToFloat64(r.objects.WithLabelValues(a)), testutil.ToFloat64(r.bytes.WithLabelValues(a)),
			testutil.ToFloat64(r.tables.WithLabelValues(a, string(outcome.Cleaned))),
			testutil.ToFloat64(r.tables.WithLabelValues(a, string(outcome.ReasonNothingToDo)))})
		require.Equal(t, len(RetentionResults()), testutil.CollectAndCount(r.tables))
		require.Equal(t, 1, testutil.CollectAndCount(r.versions))
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	t.Parallel()
	a := New(prometheus.NewRegistry(), Options{})
	b := New(prometheus.NewRegistry(), Options{})
	a.TablePurged()
	require.Equal(t, 1.0, testutil.ToFloat64(a.tablesPurged))
	require.Equal(t, 0.0, testutil.ToFloat64(b.tablesPurged))

	reg := prometheus.NewRegistry()
	New(reg, Options{})
	require.Panics(t, func() { New(reg, Options{}) }, "double registration is a wiring bug")
	require.NotPanics(t, func() { New(nil, Options{}).TablePurged() }, "nil registry")
}

func TestNilReceiver(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.PassFinished(outcome.ResultFailed, time.Second, time.Now())
	m.TablePurged()
	m.Deleted(1, 1)
	m.PurgeFailed(outcome.ReasonNotFound)
	m.PurgeConflict()
	m.LockAcquisition(outcome.LeaseError)
	m.RootRefused("r", outcome.ReasonRootError)
	m.Skipped(outcome.ReasonLimit, 1)
	m.SetRootTables("r", nil)
	m.SetOldestDueMarker("r", time.Now())
	m.SetReclaimable("r", Reclaimable{})
	m.Retained("r", "cleaned", 1, 1, 1)
	m.ForgetRoot("r")
	m.ResetRootTables()
	require.Nil(t, m.Collectors())
	require.Equal(t, AllRoots, m.RootLabel("r"))
}

func TestPassFinished(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry(), Options{})
	m.PassFinished(outcome.ResultPartial, 2*time.Minute, time.Unix(100, 0))
	require.Zero(t, testutil.ToFloat64(m.lastSuccess), "partial is not success")
	m.PassFinished(outcome.ResultSuccess, time.Minute, time.Unix(200, 500_000_000))
	require.Equal(t, 200.5, testutil.ToFloat64(m.lastSuccess))
	require.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues(string(outcome.ResultPartial))))
	require.Equal(t, 1.0, testutil.ToFloat64(m.passes.WithLabelValues(string(outcome.ResultSuccess))))
	require.Equal(t, 1, testutil.CollectAndCount(m.passDuration))

	m.Deleted(10, 4096)
	m.Deleted(1, 1)
	require.Equal(t, 11.0, testutil.ToFloat64(m.objectsDeleted))
	require.Equal(t, 4097.0, testutil.ToFloat64(m.bytesReclaimed))
	m.Skipped(outcome.ReasonHeld, 0)
	m.Skipped(outcome.ReasonHeld, 3)
	require.Equal(t, 3.0, testutil.ToFloat64(m.skipped.WithLabelValues(string(outcome.ReasonHeld))))
}

func TestRootTablesAggregated(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry(), Options{})
	require.Equal(t, AllRoots, m.RootLabel("s3://b/x"))
	m.SetRootTables("s3://b/x", map[string]int{StateLive: 3, StateDue: 1})
	m.SetRootTables("s3://b/y", map[string]int{StateLive: 2, StateHeld: 5})
	live := m.tables.WithLabelValues(AllRoots, StateLive)
	require.Equal(t, 5.0, testutil.ToFloat64(live), "sum over roots")
	require.Equal(t, 5.0, testutil.ToFloat64(m.tables.WithLabelValues(AllRoots, StateHeld)))

	m.SetRootTables("s3://b/x", map[string]int{StateLive: 1})
	require.Equal(t, 3.0, testutil.ToFloat64(m.tables.WithLabelValues(AllRoots, StateLive)), "replace, not add")
	require.Equal(t, 0.0, testutil.ToFloat64(m.tables.WithLabelValues(AllRoots, StateDue)))

	m.SetOldestDueMarker("s3://b/x", time.Unix(500, 0))
	m.SetOldestDueMarker("s3://b/y", time.Unix(300, 0))
	require.Equal(t, 300.0, testutil.ToFloat64(m.oldestDue.WithLabelValues(AllRoots)), "minimum over roots")
	m.SetOldestDueMarker("s3://b/y", time.Time{})
	require.Equal(t, 500.0, testutil.ToFloat64(m.oldestDue.WithLabelValues(AllRoots)))

	m.ForgetRoot("s3://b/x")
	require.Equal(t, 2.0, testutil.ToFloat64(m.tables.WithLabelValues(AllRoots, StateLive)))
	require.Equal(t, 0, testutil.CollectAndCount(m.oldestDue), "no root has a due marker")

	m.ResetRootTables()
	require.Equal(t, 7, testutil.CollectAndCount(m.tables), "aggregated series stay, at zero")
	require.Equal(t, 0.0, testutil.ToFloat64(m.tables.WithLabelValues(AllRoots, StateLive)))

	m.RootRefused("s3://b/x", outcome.ReasonBlastRadius)
	require.Equal(t, 1.0, testutil.ToFloat64(m.rootsRefused.WithLabelValues(AllRoots, string(outcome.ReasonBlastRadius))))
}

func TestRootTablesPerRoot(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry(), Options{PerRootLabels: true})
	require.Equal(t, "s3://b/x", m.RootLabel("s3://b/x"))
	m.SetRootTables("s3://b/x", map[string]int{StateLive: 3, StateOverdue: 2})
	m.SetRootTables("s3://b/y", map[string]int{StateLive: 2})
	require.Equal(t, 3.0, testutil.ToFloat64(m.tables.WithLabelValues("s3://b/x", StateLive)))
	require.Equal(t, 2.0, testutil.ToFloat64(m.tables.WithLabelValues("s3://b/x", StateOverdue)))
	require.Equal(t, 2.0, testutil.ToFloat64(m.tables.WithLabelValues("s3://b/y", StateLive)))
	require.Equal(t, 14, testutil.CollectAndCount(m.tables), "every state of both roots")

	m.SetOldestDueMarker("s3://b/x", time.Unix(42, 0))
	require.Equal(t, 42.0, testutil.ToFloat64(m.oldestDue.WithLabelValues("s3://b/x")))

	m.ForgetRoot("s3://b/x")
	require.Equal(t, 7, testutil.CollectAndCount(m.tables))
	require.Equal(t, 0, testutil.CollectAndCount(m.oldestDue))

	m.RootRefused("s3://b/y", outcome.ReasonRootError)
	require.Equal(t, 1.0, testutil.ToFloat64(m.rootsRefused.WithLabelValues("s3://b/y", string(outcome.ReasonRootError))))

	m.ResetRootTables()
	require.Equal(t, 0, testutil.CollectAndCount(m.tables))
}
