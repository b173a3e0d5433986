package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// retention are the metrics of version retention (docs/RETENTION.md), apart
// from the purge's: what retention removes is old versions of live tables,
// not dropped tables, and a dashboard must tell the two apart.
type retention struct {
	tables   *prometheus.CounterVec
	versions prometheus.Counter
	objects  prometheus.Counter
	bytes    prometheus.Counter
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
			Help: "Live tables version retention visited, by result (cleaned, dry_run, nothing_to_do, unsupported, held, paused, locked, conflict, shutdown, deadline, failed).",
		}, []string{"result"})),
		versions: def(m, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_versions_removed_total",
			Help: "Versions of live tables whose manifests version retention deleted.",
		})),
		objects: def(m, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_objects_deleted_total",
			Help: "Objects (manifests and the files only removed versions referenced) deleted by version retention.",
		})),
		bytes: def(m, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "retention_bytes_reclaimed_total",
			Help: "Bytes of the objects deleted by version retention, as planned before deletion.",
		})),
	}
}

func (r retention) precreate() {
	for _, v := range RetentionResults() {
		r.tables.WithLabelValues(v)
	}
}

// Retained counts one live table's version retention: its result (an
// action, or a skipped table's reason) and, when it deleted, what.
func (m *Metrics) Retained(result string, versions int, objects, bytes int64) {
	if m == nil {
		return
	}
	m.retention.tables.WithLabelValues(result).Inc()
	m.retention.versions.Add(float64(versions))
	m.retention.objects.Add(float64(objects))
	m.retention.bytes.Add(float64(bytes))
}
