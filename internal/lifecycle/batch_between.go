package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns what a purge's or a retention run's delete batch asks
// between its keys (objstore.BetweenKeys) on a backend that deletes key by
// key: a local disk, where a batch of 1,000 keys is 1,000 unlinks, tens of
// milliseconds on a fast disk and seconds on a slow or network one. The
// guard runs before each batch; between its keys a batch asks only what
// must stop it at once:
//
//   - the context (Ctrl-C, a pass's deadline), at every key: free;
//   - the marker (a drop during retention, a marker removed or rewritten
//     during a purge), the guard's one read that such an event changes,
//     once markerEveryKeys keys or markerEvery have gone by since the
//     last read, whichever comes first.
//
// The bound: on a local disk a marker read (a HEAD: a few path syscalls,
// about 5 µs on ext4) costs a tenth of an unlink (about 50 µs with its
// share of the directory's fsync), so a read per 32 keys adds well under
// 1% to a batch; on a disk slow enough that 32 unlinks take longer than
// 100 ms, the time rule reads it every 100 ms instead, a HEAD per 100 ms.
// Either way a drop stops a batch within 32 keys or 100 ms, not after
// 1,000. The hold, PAUSE and lease read-back stay per batch: they have no
// urgency a batch's time matters to (a hold placed mid-batch costs at most
// the batch, as documented), and the lease's fence is asked at every key
// anyway. A backend that sends a batch as one request never asks.
const (
	markerEveryKeys = 32
	markerEvery     = 100 * time.Millisecond
)

// betweenKeys is one batch deleter's check between keys, shared by its
// batches in flight.
type betweenKeys struct {
	read  func(context.Context) error // the guard's marker read
	clock func() time.Time            // durations only

	mu      sync.Mutex
	keys    int       // keys asked about since the last read
	last    time.Time // when the marker was last read
	reading bool      // a read is in flight
	err     error     // the first refusal: final
}

func newBetweenKeys(read func(context.Context) error, clock func() time.Time) *betweenKeys {
	return &betweenKeys{read: read, clock: clock, last: clock()}
}

// check is the objstore.BetweenKeys check (which asks ctx itself first).
// One read at a time, made outside the lock: batches in flight side by
// side go on while it is out rather than each waiting for it or sending
// its own.
func (b *betweenKeys) check(ctx context.Context) error {
	b.mu.Lock()
	if b.err != nil {
		defer b.mu.Unlock()
		return b.err
	}
	b.keys++
	due := !b.reading && (b.keys >= markerEveryKeys || b.clock().Sub(b.last) >= markerEvery)
	if due {
		b.reading, b.keys = true, 0
	}
	b.mu.Unlock()
	if !due {
		return nil
	}
	err := b.read(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reading, b.last = false, b.clock()
	if err != nil && b.err == nil {
		b.err = err
	}
	return b.err
}

// guarded restarts the count: the guard has just read the marker.
func (b *betweenKeys) guarded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys, b.last = 0, b.clock()
}

// stopped is the refusal that stopped a batch between its keys, if any:
// the batch's error is then this, not the backend's per-key wrapping of it.
func (b *betweenKeys) stopped() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// markerRead is the purge guard's read between keys: the marker still the
// one the purge committed for (a change after the commit is a *StuckError,
// as from the guard).
func (g *guard) markerRead(ctx context.Context) error {
	return g.same(ctx, MarkerKey(g.name), g.markerETag, "marker")
}

// markerRead is the retention guard's read between keys: no marker. One
// appearing means the table was dropped mid-batch: the run stops before
// the rest of the batch, as it would before the next one.
func (g *retainGuard) markerRead(ctx context.Context) error {
	key := MarkerKey(g.name)
	_, err := g.ns.store.Head(ctx, key)
	switch {
	case err == nil:
		return &ConflictError{Name: g.name, Reason: fmt.Sprintf("%s appeared during retention, inside a delete batch: the table was dropped; the run stopped before the rest of the batch, and the table is left to its purge (which removes the retention record too)", key)}
	case !errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("retain %q: re-check %s: %w", g.name, key, err)
	}
	return nil
}
