// Package clocktest holds the clocks tests move by hand: Fake, a frozen
// clock with timers for the scheduler and the daemon, and Offset, the real
// clock plus a jump a test adds. Only tests import it (the layering test
// checks).
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/scheduler"
)

// Fake is a scheduler.Clock that moves only when told to. Advance fires
// due timers in deadline order; WaitForTimers and BlockUntil let a test
// wait until the code under test is blocked on a timer, so no test needs
// to sleep. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer // pending, in creation order
	changed chan struct{}
}

var _ scheduler.Clock = (*Fake)(nil)

// NewFake returns a fake clock reading now.
func NewFake(now time.Time) *Fake {
	return &Fake{now: now, changed: make(chan struct{})}
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	ch   chan time.Time
	done bool
}

// Now is the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing once the clock reaches now+d; d <= 0 fires
// at once.
func (c *Fake) NewTimer(d time.Duration) scheduler.Timer {
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
func (c *Fake) Advance(d time.Duration) {
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
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers are pending or ctx is done.
func (c *Fake) WaitForTimers(ctx context.Context, n int) error {
	return c.waitFor(ctx, func(pending int) bool { return pending >= n })
}

// WaitForNoTimers blocks until no timer is pending or ctx is done.
func (c *Fake) WaitForNoTimers(ctx context.Context) error {
	return c.waitFor(ctx, func(pending int) bool { return pending == 0 })
}

// BlockUntil blocks until at least n timers are pending.
func (c *Fake) BlockUntil(n int) {
	_ = c.WaitForTimers(context.Background(), n)
}

func (c *Fake) waitFor(ctx context.Context, ok func(pending int) bool) error {
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

func (c *Fake) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}
