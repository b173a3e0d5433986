package lifecycle

import (
	"context"
	"sync"
)

// This file owns how many delete batches of one purge are in flight. The
// best number depends on the store: AWS takes dozens of DeleteObjects at
// once, a small MinIO or a local disk fewer, and a fixed number is either
// slow on the first or a pushback storm on the second. So the limit starts
// at limits.delete_concurrency and grows by one for each batch the store
// answered without pushing back, up to limits.max_delete_concurrency; a
// pushback (503 SlowDown, 429…, as the backend classifies it, counted by
// the retry layer) halves it, never below one. The retry layer's pacer
// slows the requests themselves; this slows how many are queued behind it.
// A store that cannot push back (a local disk: no retry layer counts
// pushbacks) gives no signal to stop growing, and its unlinks in one
// directory serialize in the kernel anyway: there the limit stays at the
// start, which also keeps a million-file purge's memory flat.

// inflight is an adaptive limit on concurrent batches.
type inflight struct {
	mu        sync.Mutex
	limit     int
	ceiling   int
	busy      int
	wake      chan struct{} // closed and replaced when a slot may be free
	pushbacks func() uint64 // nil: the store never pushes back
	seen      uint64
}

// newInflight starts at start (at least 1) and grows to ceiling (at least
// start) while pushbacks, if not nil, does not move; with pushbacks nil it
// stays at start.
func newInflight(start, ceiling int, pushbacks func() uint64) *inflight {
	start = max(1, start)
	f := &inflight{limit: start, ceiling: start, wake: make(chan struct{}), pushbacks: pushbacks}
	if pushbacks != nil {
		f.ceiling = max(start, ceiling)
		f.seen = pushbacks()
	}
	return f
}

// acquire waits for a slot or for ctx to end.
func (f *inflight) acquire(ctx context.Context) error {
	for {
		f.mu.Lock()
		if f.busy < f.limit {
			f.busy++
			f.mu.Unlock()
			return nil
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// release frees a slot and adapts the limit: a batch answered with no
// pushback since the last adjustment grows it by one; any pushback halves
// it. ok is false for a batch that failed: it says nothing about capacity.
func (f *inflight) release(ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy--
	var pushed bool
	if f.pushbacks != nil {
		n := f.pushbacks()
		pushed, f.seen = n != f.seen, n
	}
	switch {
	case pushed:
		f.limit = max(1, f.limit/2)
	case ok && f.limit < f.ceiling:
		f.limit++
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// current is the limit now (tests and logs).
func (f *inflight) current() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit
}
