package metrics

import (
	"time"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// PassFinished records one pass: its result and duration; a successful
// pass also sets reaper_last_success_timestamp_seconds to end.
func (m *Metrics) PassFinished(result outcome.Result, d time.Duration, end time.Time) {
	if m == nil {
		return
	}
	m.passes.WithLabelValues(string(result)).Inc()
	m.passDuration.Observe(d.Seconds())
	if result == outcome.ResultSuccess {
		m.lastSuccess.Set(float64(end.UnixNano()) / 1e9)
	}
}

// TablePurged counts one table whose data is gone.
func (m *Metrics) TablePurged() {
	if m == nil {
		return
	}
	m.tablesPurged.Inc()
}

// Deleted adds objects deleted and the bytes they held; call it per batch,
// so partial purges count what they removed.
func (m *Metrics) Deleted(objects int, bytes int64) {
	if m == nil {
		return
	}
	m.objectsDeleted.Add(float64(objects))
	m.bytesReclaimed.Add(float64(bytes))
}

// PurgeFailed counts a failed table, by its reason (outcome.FailureReasons).
func (m *Metrics) PurgeFailed(reason outcome.Reason) {
	if m == nil {
		return
	}
	m.purgeFailures.WithLabelValues(string(reason)).Inc()
}

// PurgeConflict counts a purge abandoned because the table changed.
func (m *Metrics) PurgeConflict() {
	if m == nil {
		return
	}
	m.purgeConflicts.Inc()
}

// LockAcquisition counts a lease attempt by its result (outcome.Leases).
func (m *Metrics) LockAcquisition(result outcome.Lease) {
	if m == nil {
		return
	}
	m.lockAcquisition.WithLabelValues(string(result)).Inc()
}

// RootRefused counts a pass over root that purged nothing, by its reason
// (outcome.RefusalReasons). root must be a URI without secrets.
func (m *Metrics) RootRefused(root string, reason outcome.Reason) {
	if m == nil {
		return
	}
	m.rootsRefused.WithLabelValues(m.RootLabel(root), string(reason)).Inc()
}

// Skipped counts n tables skipped or held, by reason (outcome.SkipReasons).
func (m *Metrics) Skipped(reason outcome.Reason, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.skipped.WithLabelValues(string(reason)).Add(float64(n))
}

// LedgerWriteFailed counts n audit ledger writes that failed.
func (m *Metrics) LedgerWriteFailed(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.ledgerFailures.Add(float64(n))
}
