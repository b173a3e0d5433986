package metrics

import "time"

// PassFinished records one pass: its result (PassSuccess, PassPartial,
// PassFailed, PassInterrupted) and duration; a successful pass also sets
// reaper_last_success_timestamp_seconds to end.
func (m *Metrics) PassFinished(result string, d time.Duration, end time.Time) {
	if m == nil {
		return
	}
	m.passes.WithLabelValues(result).Inc()
	m.passDuration.Observe(d.Seconds())
	if result == PassSuccess {
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

// PurgeFailed counts a failed table purge (FailureIO, FailureInvalidMarker,
// FailureFutureMarker, FailureLeaseLost, FailureOther).
func (m *Metrics) PurgeFailed(reason string) {
	if m == nil {
		return
	}
	m.purgeFailures.WithLabelValues(reason).Inc()
}

// PurgeConflict counts a purge abandoned because the table changed.
func (m *Metrics) PurgeConflict() {
	if m == nil {
		return
	}
	m.purgeConflicts.Inc()
}

// LockAcquisition counts a lease attempt (LockAcquired, LockContended,
// LockError).
func (m *Metrics) LockAcquisition(result string) {
	if m == nil {
		return
	}
	m.lockAcquisition.WithLabelValues(result).Inc()
}

// RootRefused counts a refused pass over root (RefusedBlastRadius,
// RefusedPaused, RefusedError). root must be a URI without secrets.
func (m *Metrics) RootRefused(root, reason string) {
	if m == nil {
		return
	}
	m.rootsRefused.WithLabelValues(m.RootLabel(root), reason).Inc()
}

// Skipped counts n tables skipped for reason (SkipNotDue, SkipLocked,
// SkipHeld, SkipShortTTL, SkipLimit).
func (m *Metrics) Skipped(reason string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.skipped.WithLabelValues(reason).Add(float64(n))
}
