package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// NewShared is New for registries that may already hold reaper's metrics:
// an embedding service opens one Namespace per root on its own registry,
// and each must count into the same series instead of panicking as New
// does. Metrics already registered are adopted; any other registration
// error (a different metric under a reaper name) still panics.
func NewShared(reg prometheus.Registerer, opts Options) *Metrics {
	m := New(nil, opts)
	if reg == nil {
		return m
	}
	m.passes = adopt(reg, m.passes)
	m.lastSuccess = adopt(reg, m.lastSuccess)
	m.passDuration = adopt(reg, m.passDuration)
	m.tablesPurged = adopt(reg, m.tablesPurged)
	m.purgeFailures = adopt(reg, m.purgeFailures)
	m.purgeConflicts = adopt(reg, m.purgeConflicts)
	m.objectsDeleted = adopt(reg, m.objectsDeleted)
	m.bytesReclaimed = adopt(reg, m.bytesReclaimed)
	m.tables = adopt(reg, m.tables)
	m.oldestDue = adopt(reg, m.oldestDue)
	m.storeRequests = adopt(reg, m.storeRequests)
	m.storeDuration = adopt(reg, m.storeDuration)
	m.lockAcquisition = adopt(reg, m.lockAcquisition)
	m.rootsRefused = adopt(reg, m.rootsRefused)
	m.skipped = adopt(reg, m.skipped)
	m.ledgerFailures = adopt(reg, m.ledgerFailures)
	m.s3Requests = adopt(reg, m.s3Requests)
	m.buildInfo = adopt(reg, m.buildInfo)
	m.retention.adopt(reg)
	m.precreate()
	return m
}

// adopt registers c, or returns the collector of the same description
// already registered.
func adopt[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Errorf("metrics: register: %w", err))
}
