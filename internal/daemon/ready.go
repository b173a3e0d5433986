package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/worker"
)

// Readiness answers /readyz: the configuration loaded (it did, or the
// daemon would not be serving) and every root is reachable. Probes are
// cached for TTL so a scraping load balancer does not hammer the store.
type Readiness struct {
	// Roots and Open are the worker's: the roots of a pass and how each is
	// opened.
	Roots func(ctx context.Context) ([]config.Root, error)
	Open  func(ctx context.Context, root config.Root) (objstore.Store, error)
	// TTL is how long an answer is reused (default 15s).
	TTL time.Duration
	// Timeout bounds one probe (default 10s).
	Timeout time.Duration
	// Now is the cache's clock; nil uses time.Now.
	Now func() time.Time

	mu      sync.Mutex
	checked time.Time
	err     error
}

// NewReadiness probes the roots of w.
func NewReadiness(w *worker.Worker) *Readiness {
	return &Readiness{Roots: w.Roots, Open: w.Open}
}

func (r *Readiness) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Check returns nil when every root is reachable.
func (r *Readiness) Check(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ttl := r.TTL
	if ttl == 0 {
		ttl = 15 * time.Second
	}
	if !r.checked.IsZero() && r.now().Sub(r.checked) < ttl {
		return r.err
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.err = r.probe(ctx)
	r.checked = r.now()
	return r.err
}

// probe lists the roots and reads one small key of each.
func (r *Readiness) probe(ctx context.Context) error {
	rs, err := r.Roots(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range rs {
		if err := r.probeRoot(ctx, root); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", root.URI, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Readiness) probeRoot(ctx context.Context, root config.Root) error {
	s, err := r.Open(ctx, root)
	if err != nil {
		return err
	}
	if _, err := s.Head(ctx, worker.PauseKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	return nil // a readable store; the PAUSE itself is judged by the pass
}

// PassFinished marks the store reachable after a pass that reached every
// root, so /readyz need not probe again right away.
func (r *Readiness) PassFinished(rep *worker.Report) {
	for _, rr := range rep.Roots {
		if rr.Err != nil {
			return
		}
	}
	r.mu.Lock()
	r.checked, r.err = r.now(), nil
	r.mu.Unlock()
}
