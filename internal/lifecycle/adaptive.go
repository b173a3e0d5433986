package lifecycle

import (
	"context"
	"math"
	"sync"
	"time"
)

// This file owns how many delete batches of one purge are in flight. The
// best number depends on the store: AWS takes dozens of DeleteObjects at
// once, a small MinIO or a local disk fewer, and a fixed number is either
// slow on the first or a pushback storm on the second. So the limit starts
// at limits.delete_concurrency and grows toward
// limits.max_delete_concurrency only while the store does not push back
// and throughput rises:
//
//   - It measures throughput (batches answered per second) over a window
//     of as many answered batches as the limit, then doubles the limit and
//     measures again. A window starts once the batches sent under the
//     previous limit are all answered: counting them would measure the old
//     limit, and hide most of what a step gained.
//   - A step under which throughput rose (by more than 10%, beyond the
//     noise of one window) doubles again.
//   - A step that changed it less holds there: throughput no longer rises
//     with the limit. One under which it fell by more than 10% goes back to
//     the previous limit, then holds.
//   - A pushback (503 SlowDown, 429…, as the backend classifies it,
//     counted by the retry layer) halves it, never below one, and starts
//     the measuring over.
//
// The retry layer's pacer slows the requests themselves; this slows how
// many are queued behind it. A store that cannot push back (a local disk:
// no retry layer counts pushbacks) gives no signal to stop growing, and its
// unlinks in one directory serialize in the kernel anyway: there the limit
// stays at the start, which also keeps a million-file purge's memory flat.

// noise is how much one window's throughput may differ from the last for
// no reason but chance: a step up must raise it by more to be followed by
// another, and lower it by more to be taken back.
const noise = 0.10

// inflight is an adaptive limit on concurrent batches.
type inflight struct {
	mu        sync.Mutex
	limit     int
	ceiling   int
	busy      int
	wake      chan struct{} // closed and replaced when a slot may be free
	pushbacks func() uint64 // nil: the store never pushes back
	seen      uint64
	now       func() time.Time
	// waiting, if set, is called each time acquire is about to wait for a
	// slot (tests: a batch queued behind a frozen one).
	waiting func()

	// The current window: since when (zero until the first batch), how
	// many batches answered in it; skip batches sent under the previous
	// limit are still to be answered before it starts.
	since    time.Time
	answered int
	skip     int
	// The previous window's limit and throughput; prevLimit 0: none yet.
	prevLimit int
	prevRate  float64
	settled   bool // a step up did not pay: hold until a pushback
}

// newInflight starts at start (at least 1) and grows to ceiling (at least
// start) while pushbacks, if not nil, does not move and throughput rises;
// with pushbacks nil it stays at start. now, if not nil, replaces
// time.Now (tests).
func newInflight(start, ceiling int, pushbacks func() uint64, now func() time.Time) *inflight {
	start = max(1, start)
	if now == nil {
		now = time.Now
	}
	f := &inflight{limit: start, ceiling: start, wake: make(chan struct{}), pushbacks: pushbacks, now: now}
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
			if f.since.IsZero() { // the first window starts with the first batch
				f.since = f.now()
			}
			f.mu.Unlock()
			return nil
		}
		wake, waiting := f.wake, f.waiting
		f.mu.Unlock()
		if waiting != nil {
			waiting()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// release frees a slot and adapts the limit (see the file comment). ok is
// false for a batch that failed: it says nothing about capacity.
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
		f.setLimit(max(1, f.limit/2))
		f.prevLimit, f.prevRate, f.settled = 0, 0, false
	case f.skip > 0:
		if f.skip--; f.skip == 0 {
			f.since = f.now()
		}
	case ok && !f.settled && f.ceiling > f.limit:
		f.answered++
		if f.answered >= f.limit {
			f.step()
		}
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// step ends a window: it judges the last step up by the throughput it
// brought, and takes the next one or settles.
func (f *inflight) step() {
	rate := math.Inf(1)
	if d := f.now().Sub(f.since).Seconds(); d > 0 {
		rate = float64(f.answered) / d
	}
	if f.prevLimit > 0 {
		switch gain := rate/f.prevRate - 1; {
		case gain < -noise:
			f.settled = true
			f.setLimit(f.prevLimit)
			return
		case gain <= noise:
			f.settled = true
			f.setLimit(f.limit)
			return
		}
	}
	f.prevLimit, f.prevRate = f.limit, rate
	f.setLimit(min(f.ceiling, 2*f.limit))
}

// setLimit changes the limit and starts a new window once the batches in
// flight, sent under the old limit, are answered.
func (f *inflight) setLimit(n int) {
	f.limit = n
	f.answered, f.skip = 0, f.busy
	if f.skip == 0 {
		f.since = f.now()
	}
}

// current is the limit now (tests and logs).
func (f *inflight) current() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit
}
