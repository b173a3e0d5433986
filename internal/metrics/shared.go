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
	m := newMetrics(opts, reg)
	m.adoptFrom = nil
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
