package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// retention are the metrics of version retention (docs/RETENTION.md), apart
// from the purge's: what retention removes is old versions of live tables,
// not dropped tables, and a dashboard must tell the two apart. Each carries
// the root label, as reaper_tables does (RootLabel: "" without per-root
// labels), so a pass over many roots shows which root retention cleaned.
type retention struct {
	tables   *prometheus.CounterVec
	versions *prometheus.CounterVec
	objects  *prometheus.CounterVec
	bytes    *prometheus.CounterVec
}

// RetentionResults are reaper_retention_tables_total's result values: the
// action of a table's retention, or the reason of a skipped one.
func RetentionResults() []string {
	return []string{string(outcome.Cleaned), string(outcome.DryRun), string(outcome.ReasonNothingToDo),
		string(outcome.ReasonUnsupported), string(outcome.Held), string(outcome.ReasonPaused),
		string(outcome.ReasonLocked), string(outcome.Conflict), string(outcome.ReasonShutdown),
		string(outcome.ReasonDeadline), string(outcome.Failed)}
}

func newRetention(m *Metrics) retention {
	return retention{
		tables: def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_tables_total",
			Help: "Live tables version retention visited, by root and result (" + join(RetentionResults()) + "); root is empty when per-root labels are off.",
		}, []string{"root", "result"})),
		versions: def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_versions_removed_total",
			Help: "Versions of live tables whose manifests version retention deleted, by root.",
		}, []string{"root"})),
		objects: def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_objects_deleted_total",
			Help: "Objects (manifests and the files only removed versions referenced) deleted by version retention, by root.",
		}, []string{"root"})),
		bytes: def(m, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_bytes_reclaimed_total",
			Help: "Bytes of the objects deleted by version retention, as planned before deletion, by root.",
		}, []string{"root"})),
	}
}

// precreate creates label's series at zero: every result, and the three
// totals, so rate() and increase() see a root from its first report.
func (r retention) precreate(label string) {
	for _, v := range RetentionResults() {
		r.tables.WithLabelValues(label, v)
	}
	r.versions.WithLabelValues(label)
	r.objects.WithLabelValues(label)
	r.bytes.WithLabelValues(label)
}

// Retained counts one live table's version retention on root: its result
// (an action, or a skipped table's reason) and, when it deleted, what. A
// root's series are created at zero when it is first reported.
func (m *Metrics) Retained(root, result string, versions int, objects, bytes int64) {
	if m == nil {
		return
	}
	label := m.RootLabel(root)
	m.mu.Lock()
	if !m.retentionRoots[label] {
		m.retentionRoots[label] = true
		m.retention.precreate(label)
	}
	m.mu.Unlock()
	m.retention.tables.WithLabelValues(label, result).Inc()
	m.retention.versions.WithLabelValues(label).Add(float64(versions))
	m.retention.objects.WithLabelValues(label).Add(float64(objects))
	m.retention.bytes.WithLabelValues(label).Add(float64(bytes))
}
