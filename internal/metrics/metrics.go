// Package metrics holds reaper's Prometheus metrics, the objstore wrappers
// that count and trace store calls, an http.RoundTripper that counts S3
// requests, OpenTelemetry setup, and pushing or writing metrics for batch
// runs. Nothing is registered globally: New takes the registry.
//
// Metrics (all prefixed reaper_):
//
//	passes_total{result}                       success, partial, failed, interrupted
//	last_success_timestamp_seconds             gauge, end of the last successful pass
//	pass_duration_seconds                      histogram, 1s to 8h
//	tables_purged_total
//	purge_failures_total{reason}               io, invalid_marker, future_marker, lease_lost, other
//	purge_conflicts_total
//	objects_deleted_total
//	bytes_reclaimed_total
//	tables{root,state}                         after the last pass: live, soft_deleted, due, overdue, orphan_marker, invalid_marker, held
//	oldest_due_marker_timestamp_seconds{root}  absent when nothing is due
//	objstore_requests_total{op,code}           WrapStore; code ok, not_found, precondition, canceled, error
//	objstore_request_duration_seconds{op}      WrapStore; histogram, 5ms to 60s
//	lock_acquisitions_total{result}            acquired, contended, error
//	roots_refused_total{root,reason}           blast_radius, paused, error
//	skipped_total{reason}                      not_due, locked, held, short_ttl, limit
//	ledger_write_failures_total                audit ledger writes that failed (each fails its pass)
//	s3_http_requests_total{operation,code}     RequestCounter; code is the HTTP status or "error"
//	store_http_requests_total{backend,operation,code}  RequestCounter.ForBackend; operation in the backend's words
//	build_info{version,go_version}             always 1
//	retention_tables_total{root,result}        live tables version retention visited (RetentionResults)
//	retention_versions_removed_total{root}     versions whose manifests retention deleted
//	retention_objects_deleted_total{root}      objects deleted by retention
//	retention_bytes_reclaimed_total{root}      bytes of those objects
//	retention_reclaimable_bytes{root}          gauge, what the root's retention plans would still delete after the last pass that planned it; absent until planned
//	retention_reclaimable_versions{root}       gauge, the versions they would still remove
//
// The root label is "" (aggregated) unless Options.PerRootLabels is set.
package metrics

import (
	"cmp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lance-reaper/reaper/internal/outcome"
)

const namespace = "reaper"

// AllRoots is the root label value when Options.PerRootLabels is false:
// the per-root series collapse into one series aggregated over all roots.
const AllRoots = ""

// Options shape the label set.
type Options struct {
	// PerRootLabels gives reaper_tables, reaper_oldest_due_marker_timestamp_seconds,
	// reaper_roots_refused_total and the retention_* metrics one series per
	// root (the root URI, which never carries secrets). When false the root label is always ""
	// (Prometheus treats that as no label): table counts are summed over the
	// roots, the oldest due marker is the minimum over them. Turn it off
	// when a deployment has many roots.
	PerRootLabels bool
	// Version is reaper_build_info's version label ("unknown" when empty).
	Version string
}

// Metrics holds every reaper metric. Its methods are safe for concurrent
// use, and a nil *Metrics is valid and records nothing, so components can
// take one optionally.
type Metrics struct {
	opts Options

	passes          *prometheus.CounterVec
	lastSuccess     prometheus.Gauge
	passDuration    prometheus.Histogram
	tablesPurged    prometheus.Counter
	purgeFailures   *prometheus.CounterVec
	purgeConflicts  prometheus.Counter
	objectsDeleted  prometheus.Counter
	bytesReclaimed  prometheus.Counter
	tables          *prometheus.GaugeVec
	oldestDue       *prometheus.GaugeVec
	storeRequests   *prometheus.CounterVec
	storeDuration   *prometheus.HistogramVec
	lockAcquisition *prometheus.CounterVec
	rootsRefused    *prometheus.CounterVec
	skipped         *prometheus.CounterVec
	ledgerFailures  prometheus.Counter
	s3Requests      *prometheus.CounterVec
	// storeHTTPRequests counts what s3Requests counts, for every HTTP
	// backend, by the backend's own operation names.
	storeHTTPRequests *prometheus.CounterVec
	buildInfo         *prometheus.GaugeVec
	retention         retention
	reclaim           reclaimGauges

	// all is every metric above, in declaration order; adoptFrom is the
	// registry NewShared adopts them from.
	all       []prometheus.Collector
	adoptFrom prometheus.Registerer

	// mu guards the per-root state behind the aggregated gauges.
	mu          sync.Mutex
	rootTables  map[string]map[string]int
	rootOldest  map[string]time.Time
	rootReclaim map[string]Reclaimable
	// retentionRoots are the root labels whose retention series exist.
	retentionRoots map[string]bool
}

// PassDurationBuckets span one second to eight hours.
func PassDurationBuckets() []float64 {
	return []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800}
}

// RequestDurationBuckets span 5ms to one minute.
func RequestDurationBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

// New creates every metric, registers them on reg and pre-creates the known
// label values at zero. A nil reg leaves them unregistered. Like
// prometheus.MustRegister, it panics when reg already holds reaper metrics:
// that is a wiring bug, not a runtime condition.
func New(reg prometheus.Registerer, opts Options) *Metrics {
	m := newMetrics(opts, nil)
	if reg != nil {
		reg.MustRegister(m.all...)
	}
	return m
}

// newMetrics declares every metric, once: each is a field of Metrics and
// one def here. With adoptFrom set (NewShared), a metric that registry
// already holds is adopted instead of created anew.
func newMetrics(opts Options, adoptFrom prometheus.Registerer) *Metrics {
	m := &Metrics{
		opts:           opts,
		rootTables:     make(map[string]map[string]int),
		rootOldest:     make(map[string]time.Time),
		rootReclaim:    make(map[string]Reclaimable),
		adoptFrom:      adoptFrom,
		retentionRoots: make(map[string]bool),
	}
	m.passes = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "passes_total",
		Help: "Purge passes finished, by result (" + join(outcome.Results()) + ").",
	}, []string{"result"}))
	m.lastSuccess = def(m, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "last_success_timestamp_seconds",
		Help: "Unix time at which the last fully successful purge pass finished.",
	}))
	m.passDuration = def(m, prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "pass_duration_seconds",
		Help:    "Duration of purge passes, of any result.",
		Buckets: PassDurationBuckets(),
	}))
	m.tablesPurged = def(m, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "tables_purged_total",
		Help: "Soft-deleted tables whose data was removed completely.",
	}))
	m.purgeFailures = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "purge_failures_total",
		Help: "Tables that failed, by reason (" + join(outcome.FailureReasons()) + ").",
	}, []string{"reason"}))
	m.purgeConflicts = def(m, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "purge_conflicts_total",
		Help: "Table purges abandoned because the table changed underneath (restored or re-created).",
	}))
	m.objectsDeleted = def(m, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "objects_deleted_total",
		Help: "Objects deleted by purges.",
	}))
	m.bytesReclaimed = def(m, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "bytes_reclaimed_total",
		Help: "Bytes of the objects deleted by purges, as listed before deletion.",
	}))
	m.tables = def(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "tables",
		Help: "Tables of each root of the last pass by state, as left by that pass (its scan less the tables it purged); root is empty when per-root labels are off.",
	}, []string{"root", "state"}))
	m.oldestDue = def(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "oldest_due_marker_timestamp_seconds",
		Help: "Unix time at which the oldest due marker left by the last pass became due; absent when nothing is due.",
	}, []string{"root"}))
	m.storeRequests = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "objstore_requests_total",
		Help: "Object store calls by operation and code (ok, not_found, precondition, canceled, error); listings count one per page.",
	}, []string{"op", "code"}))
	m.storeDuration = def(m, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "objstore_request_duration_seconds",
		Help:    "Duration of object store calls by operation; listings observe one value per page.",
		Buckets: RequestDurationBuckets(),
	}, []string{"op"}))
	m.lockAcquisition = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "lock_acquisitions_total",
		Help: "Lease lock acquisition attempts by result (" + join(outcome.Leases()) + ").",
	}, []string{"result"}))
	m.rootsRefused = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "roots_refused_total",
		Help: "Passes over a root refused before deleting anything, by reason (" + join(outcome.RefusalReasons()) + ").",
	}, []string{"root", "reason"}))
	m.skipped = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "skipped_total",
		Help: "Tables skipped or held by a pass, by reason (" + join(outcome.SkipReasons()) + ").",
	}, []string{"reason"}))
	m.ledgerFailures = def(m, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "ledger_write_failures_total",
		Help: "Audit ledger writes that failed (a journal record, a pass's file, folding a dead pass's journal); each fails its pass.",
	}))
	m.s3Requests = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "s3_http_requests_total",
		Help: "HTTP requests sent to S3, by operation and HTTP status code (\"error\" when no response arrived).",
	}, []string{"operation", "code"}))
	m.storeHTTPRequests = def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "store_http_requests_total",
		Help: "HTTP requests sent to an object store, by backend (its URI scheme), operation (as the backend's API names it) and HTTP status code (\"error\" when no response arrived).",
	}, []string{"backend", "operation", "code"}))
	m.buildInfo = def(m, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; its labels say which reaper and Go built the process that exported it.",
	}, []string{"version", "go_version"}))
	m.retention = newRetention(m)
	m.reclaim = newReclaimGauges(m)
	m.buildInfo.WithLabelValues(cmp.Or(opts.Version, "unknown"), runtime.Version()).Set(1)
	m.precreate()
	return m
}

// def records c as one of m's metrics and returns it, or, when m adopts
// from a registry that already holds c's metric, the one registered there.
func def[C prometheus.Collector](m *Metrics, c C) C {
	if m.adoptFrom != nil {
		c = adopt(m.adoptFrom, c)
	}
	m.all = append(m.all, c)
	return c
}

// precreate creates the series of every known label value at zero. Per-root
// series appear when a root is first reported; with per-root labels off the
// aggregated ones exist from the start.
func (m *Metrics) precreate() {
	for _, v := range outcome.Results() {
		m.passes.WithLabelValues(string(v))
	}
	for _, v := range outcome.FailureReasons() {
		m.purgeFailures.WithLabelValues(string(v))
	}
	for _, v := range outcome.Leases() {
		m.lockAcquisition.WithLabelValues(string(v))
	}
	for _, v := range outcome.SkipReasons() {
		m.skipped.WithLabelValues(string(v))
	}
	for _, op := range storeOps {
		m.storeDuration.WithLabelValues(op)
		for _, code := range storeCodes {
			m.storeRequests.WithLabelValues(op, code)
		}
	}
	if !m.opts.PerRootLabels {
		for _, s := range tableStates {
			m.tables.WithLabelValues(AllRoots, s)
		}
		for _, r := range outcome.RefusalReasons() {
			m.rootsRefused.WithLabelValues(AllRoots, string(r))
		}
		m.retention.precreate(AllRoots)
		m.retentionRoots[AllRoots] = true
	}
}

// Collectors returns every metric, for callers that register them on more
// than one registry (a push registry next to the scrape one).
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return m.all
}

// RootLabel is the root label value for root: root itself with per-root
// labels, AllRoots ("") without.
func (m *Metrics) RootLabel(root string) string {
	if m == nil || !m.opts.PerRootLabels {
		return AllRoots
	}
	return root
}

// join lists label values for a help text.
func join[T ~string](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return strings.Join(out, ", ")
}
