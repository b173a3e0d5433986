package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/worker"
)

// Readiness defaults. A probe asks each root one cheap question, all roots
// at once (up to ReadyConcurrency), so an answer is at most ReadyTTL old and
// comes within ReadyTimeout, well inside the Deployment's 10 s probe timeout.
const (
	// ReadyTTL is how long an answer is reused: enough to absorb a storm
	// of probes (several kubelets, a load balancer), short enough that a
	// root moved away shows on the next probe.
	ReadyTTL = time.Second
	// ReadyTimeout bounds one probe: the roots' expansion and every root's
	// check. A root not answered by then is not ready.
	ReadyTimeout = 5 * time.Second
	// ReadyRootTimeout bounds one root's check (open and one listing).
	ReadyRootTimeout = 2 * time.Second
	// ReadyConcurrency is how many roots are checked at once.
	ReadyConcurrency = 16
)

// Readiness answers /readyz: the configuration loaded (it did, or the
// daemon would not be serving) and every root is reachable, checked on the
// probe itself: the roots are expanded (discovery included), and each is
// opened (a local root's directory must exist) and the first page of its
// _reaper/ prefix is listed (a bucket or container must exist and be
// listable). The answer is reused for TTL so a storm of probes
// does not hammer the stores; probes that arrive during a check wait for
// its answer.
type Readiness struct {
	// Roots and Open are the worker's: the roots of a pass and how each is
	// opened.
	Roots func(ctx context.Context) ([]roots.Root, error)
	Open  func(ctx context.Context, root roots.Root) (objstore.Store, error)
	// TTL is how long an answer is reused (default ReadyTTL).
	TTL time.Duration
	// Timeout bounds one probe (default ReadyTimeout); RootTimeout one
	// root's check (default ReadyRootTimeout).
	Timeout     time.Duration
	RootTimeout time.Duration
	// Concurrency is how many roots are checked at once (default
	// ReadyConcurrency).
	Concurrency int
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
	if !r.checked.IsZero() && r.now().Sub(r.checked) < cmp.Or(r.TTL, ReadyTTL) {
		return r.err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(r.Timeout, ReadyTimeout))
	defer cancel()
	r.err = r.probe(ctx)
	r.checked = r.now()
	return r.err
}

// probe lists the roots and checks them concurrently.
func (r *Readiness) probe(ctx context.Context) error {
	rs, err := r.Roots(ctx)
	if err != nil {
		return err
	}
	errs := make([]error, len(rs))
	sem := make(chan struct{}, max(1, cmp.Or(r.Concurrency, ReadyConcurrency)))
	var wg sync.WaitGroup
	for i, root := range rs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = fmt.Errorf("root %s: not checked: %w", root.URI, context.Cause(ctx))
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.probeRoot(ctx, root); err != nil {
				errs[i] = fmt.Errorf("root %s: %w", root.URI, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Readiness) probeRoot(ctx context.Context, root roots.Root) error {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(r.RootTimeout, ReadyRootTimeout))
	defer cancel()
	s, err := r.Open(ctx, root)
	if err != nil {
		return err
	}
	// A listing, not a HEAD of the PAUSE key: S3 and GCS answer a HEAD in a
	// bucket that does not exist with the same 404 as a missing key, so a
	// deleted bucket read as ready, and a HEAD needs only read rights where
	// every pass starts by listing. _reaper/ holds at most the PAUSE and
	// the clock probe, so its first page is one small request.
	err = s.List(ctx, reaperDir, func(objstore.Page) error { return errFirstPage })
	if err != nil && !errors.Is(err, errFirstPage) {
		return err
	}
	return nil // a listable store; a PAUSE itself is judged by the pass
}

// reaperDir is reaper's own prefix in a root (the PAUSE, the clock probe).
var reaperDir = path.Dir(worker.PauseKey) + "/"

// errFirstPage stops a readiness listing after its first page.
var errFirstPage = errors.New("first page read")

// PassFinished marks the store reachable after a pass that reached every
// root, so a probe within TTL of it need not ask again.
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
