package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how a root is read name by name for a status or a plan,
// in bounded memory: the root's listing is read as it arrives, each name
// is handed on once complete (scan_window.go), a fixed pool of
// DefaultMarkerReads readers reads its marker, lease, hold and commit, and
// the caller receives the names in the window's order from its own
// goroutine. What is in flight at once is the window, at most scanAhead
// names being read or waiting to be handed over, and the pool: never a
// goroutine, a status or a read per name of the whole root.
//
// The store's clock (clock.go) is read once, when the first name is
// complete, after the listing's first page: every name is judged at it
// (lease liveness, due-ness). A marker that reads as dated in the future
// is judged again at a clock read after it (describe), so a drop made
// while a long scan runs is not mistaken for a future-dated marker.

// scanAhead is how many names may wait, read or being read, for the
// caller: enough to keep the pool busy while the caller writes a row.
const scanAhead = 4 * DefaultMarkerReads

// scanJob is one complete name on its way to the caller.
type scanJob struct {
	name  string
	entry rootEntry
	// named: the caller asked for this name (not_found is reported).
	named  bool
	status TableStatus
	err    error
	done   chan struct{}
}

// scanMode is what a scan reads beside the root's listing.
type scanMode int

const (
	// scanPlan reads what a plan needs: markers, leases, holds, commits.
	scanPlan scanMode = iota
	// scanStatus reads what a status shows too.
	scanStatus
	// scanStatusCatalog is scanStatus handing on the catalog too.
	scanStatusCatalog
)

// scanResult is what a scan learned beside the names.
type scanResult struct {
	// now is the store's clock every name was judged at.
	now time.Time
	// leaseOnly are the names that had a lease and no marker, sorted: the
	// only candidates for SweepStaleLeases.
	leaseOnly []string
}

// scanner is one scan's shared state.
type scanner struct {
	ns     *Namespace
	listed *Listing
	only   *nameFilter
	order  scanOrder
	// status: the scan is a status's, which reads what a plan leaves to
	// the purge or the retention read (written_after_drop.go,
	// namespaced.go); catalog: it hands on the catalog too.
	status, catalog bool
	// now is set by the producer before it hands out the first job.
	now       time.Time
	nowRead   bool
	leaseOnly []string
}

// scan lists the root once (or takes listed, listing.go) and calls emit
// with the status of every name (only those in only, when any, not_found
// for those without a key), in order, from the caller's goroutine. Lone
// leases (no data, no marker) are not names of the root unless named. An
// error from emit stops the scan and is returned.
//
// A status scan (mode) has the pool check each due soft-deleted table for
// writes after its drop (written_after_drop.go) and list the top of each
// namespaced table's directory (namespaced.go): what status shows; a plan
// leaves the first to the purge's own walk and the second to the retention
// read.
func (ns *Namespace) scan(ctx context.Context, listed *Listing, only []string, order scanOrder, mode scanMode, emit func(TableStatus, time.Time) error) (scanResult, error) {
	status := mode != scanPlan
	for _, n := range only {
		if err := ValidateName(n); err != nil {
			return scanResult{}, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if listed != nil && listed.Full() {
		listed = nil // too big to have been carried: list the root
	}
	s := &scanner{ns: ns, listed: listed, only: newNameFilter(only), order: order, status: status, catalog: mode == scanStatusCatalog}
	jobs := make(chan *scanJob)
	queue := make(chan *scanJob, scanAhead)
	var wg sync.WaitGroup
	for range DefaultMarkerReads {
		wg.Go(func() {
			for j := range jobs {
				j.status, j.err = ns.describe(ctx, j.name, &j.entry, s.now)
				if j.err == nil && status {
					j.err = ns.noteWriteAfterDrop(ctx, &j.status, s.now)
				}
				if j.err == nil && status && j.entry.namespaced {
					j.err = ns.probeNamespaced(ctx, &j.status)
				}
				close(j.done)
			}
		})
	}
	var listErr error
	wg.Go(func() {
		defer close(queue)
		defer close(jobs)
		if listErr = s.produce(ctx, jobs, queue); listErr != nil {
			cancel(listErr)
		}
	})
	err := s.consume(ctx, cancel, queue, emit)
	wg.Wait()
	if err == nil {
		err = listErr
	}
	if err != nil {
		return scanResult{}, err
	}
	return scanResult{now: s.now, leaseOnly: s.leaseOnly}, nil
}

// consume hands the caller each job in queue order; after the first error
// it only drains the queue, so the producer can stop.
func (s *scanner) consume(ctx context.Context, cancel context.CancelCauseFunc, queue <-chan *scanJob, emit func(TableStatus, time.Time) error) error {
	var first error
	fail := func(err error) {
		first = err
		cancel(err)
	}
	for j := range queue {
		if first != nil {
			continue
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			fail(context.Cause(ctx))
			continue
		}
		switch {
		case j.err != nil:
			fail(j.err)
		case j.status.State == StateNotFound && !j.named:
			// A lone lease is not a table of the root.
		default:
			if err := emit(j.status, s.now); err != nil {
				fail(err)
			}
		}
	}
	return first
}

// produce feeds the window from the listing and hands out each name it
// releases: to the pool when it needs a read, and to the caller's queue.
func (s *scanner) produce(ctx context.Context, jobs, queue chan<- *scanJob) error {
	w := newWindow(s.order, s.only)
	hand := func(p *pendingName) error { return s.hand(ctx, p, jobs, queue) }
	if s.listed != nil {
		for name, e := range s.listed.entries {
			w.addEntry(name, *e)
		}
	} else {
		err := s.ns.store.List(ctx, "", func(pg objstore.Page) error {
			if err := w.add(pg); err != nil {
				return err
			}
			return w.release(false, hand)
		})
		if err != nil {
			return fmt.Errorf("list root %s: %w", s.ns.store.URI(), err)
		}
	}
	if err := w.release(true, hand); err != nil {
		return err
	}
	for _, id := range s.only.unmatched() {
		// An object id no directory answered: not found.
		if err := s.handName(ctx, stemName{name: id}, jobs, queue); err != nil {
			return err
		}
	}
	slices.Sort(s.leaseOnly)
	// Even a root with no name is judged at a time (Plan.Now).
	return s.readClock(ctx)
}

// hand turns a released stem into a job for each name it stands for
// (scan_names.go).
func (s *scanner) hand(ctx context.Context, p *pendingName, jobs, queue chan<- *scanJob) error {
	for _, n := range s.only.split(p.name, p.entry, s.catalog) {
		if err := s.handName(ctx, n, jobs, queue); err != nil {
			return err
		}
	}
	return nil
}

// handName turns one name into a job: described in place when it has
// nothing to read, else queued for the pool.
func (s *scanner) handName(ctx context.Context, p stemName, jobs, queue chan<- *scanJob) error {
	if err := s.readClock(ctx); err != nil {
		return err
	}
	named := s.only != nil
	if p.entry.lease && !p.entry.marker {
		s.leaseOnly = append(s.leaseOnly, p.name)
	}
	j := &scanJob{name: p.name, entry: p.entry, named: named, done: make(chan struct{})}
	e := p.entry
	switch {
	case !e.any():
		j.status = TableStatus{Name: p.name, State: StateNotFound}
		close(j.done)
	case !e.marker && !e.lease && !e.hold && !e.commit && !(s.status && e.namespaced):
		// Data or a link only: nothing to read.
		j.status, j.err = s.ns.describe(ctx, j.name, &j.entry, s.now)
		close(j.done)
	default:
		select {
		case jobs <- j:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	select {
	case queue <- j:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readClock reads the store's clock once, before the first name is
// judged.
func (s *scanner) readClock(ctx context.Context) error {
	if s.nowRead {
		return nil
	}
	now, err := s.ns.storeNow(ctx)
	if err != nil {
		return err
	}
	s.now, s.nowRead = now, true
	return nil
}
