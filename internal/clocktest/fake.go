package scheduler

import (
	"context"
	"slices"
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when told to, for tests here and in
// other packages. Advance fires due timers in deadline order; WaitForTimers
// and BlockUntil let a test wait until the code under test is blocked on a
// timer, so no test needs to sleep. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer // pending, in creation order
	changed chan struct{}
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock returns a fake clock reading now.
func NewFakeClock(now time.Time) *FakeClock {
	return &FakeClock{now: now, changed: make(chan struct{})}
}

type fakeTimer struct {
	c    *FakeClock
	at   time.Time
	ch   chan time.Time
	done bool
}

// Now is the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing once the clock reaches now+d; d <= 0 fires
// at once.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.done = true
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	c.timers = slices.DeleteFunc(c.timers, func(x *fakeTimer) bool { return x == t })
	c.notifyLocked()
	return true
}

// Advance moves the clock by d and fires every timer now due, earliest
// first. A timer's channel holds one value, as time.Timer's does.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool {
		if t.at.After(c.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.done = true
		t.ch <- t.at
	}
	if len(due) > 0 {
		c.notifyLocked()
	}
}

// Pending is the number of timers waiting to fire.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers are pending or ctx is done.
func (c *FakeClock) WaitForTimers(ctx context.Context, n int) error {
	return c.waitFor(ctx, func(pending int) bool { return pending >= n })
}

// WaitForNoTimers blocks until no timer is pending or ctx is done.
func (c *FakeClock) WaitForNoTimers(ctx context.Context) error {
	return c.waitFor(ctx, func(pending int) bool { return pending == 0 })
}

// BlockUntil blocks until at least n timers are pending.
func (c *FakeClock) BlockUntil(n int) {
	_ = c.WaitForTimers(context.Background(), n)
}

func (c *FakeClock) waitFor(ctx context.Context, ok func(pending int) bool) error {
	for {
		c.mu.Lock()
		if ok(len(c.timers)) {
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}
