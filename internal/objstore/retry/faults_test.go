package retry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var (
	errTransient = errors.New("test: 503 slow down")
	errPermanent = errors.New("test: 403 access denied")
)

func isTestTransient(err error) bool { return errors.Is(err, errTransient) }

// flaky fails the first fails calls of every operation with err (default
// errTransient) before they reach the inner store. With land set, a failing
// call first runs against the inner store: the write lands, its answer is lost.
type flaky struct {
	objstore.Store
	fails int
	err   error
	land  bool

	mu    sync.Mutex
	calls map[string]int
	batch [][]string
}

func newFlaky(inner objstore.Store, fails int) *flaky {
	return &flaky{Store: inner, fails: fails, calls: map[string]int{}}
}

// fail counts a call of op and reports the error it should fail with.
func (f *flaky) fail(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.calls[op] > f.fails {
		return nil
	}
	if f.err != nil {
		return f.err
	}
	return errTransient
}

func (f *flaky) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *flaky) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if err := f.fail("get"); err != nil {
		return nil, objstore.Object{}, err
	}
	return f.Store.Get(ctx, key, limit)
}

func (f *flaky) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := f.fail("put"); err != nil {
		return objstore.Object{}, err
	}
	return f.Store.Put(ctx, key, body)
}

func (f *flaky) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := f.fail("put if absent"); err != nil {
		if f.land {
			_, _ = f.Store.PutIfAbsent(ctx, key, body)
		}
		return objstore.Object{}, err
	}
	return f.Store.PutIfAbsent(ctx, key, body)
}

func (f *flaky) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if err := f.fail("put if match"); err != nil {
		if f.land {
			_, _ = f.Store.PutIfMatch(ctx, key, body, etag)
		}
		return objstore.Object{}, err
	}
	return f.Store.PutIfMatch(ctx, key, body, etag)
}

func (f *flaky) DeleteIfMatch(ctx context.Context, key, etag string) error {
	if err := f.fail("delete if match"); err != nil {
		if f.land {
			_ = f.Store.DeleteIfMatch(ctx, key, etag)
		}
		return err
	}
	return f.Store.DeleteIfMatch(ctx, key, etag)
}

func (f *flaky) Delete(ctx context.Context, key string) error {
	if err := f.fail("delete"); err != nil {
		return err
	}
	return f.Store.Delete(ctx, key)
}

func (f *flaky) Head(ctx context.Context, key string) (objstore.Object, error) {
	if err := f.fail("head"); err != nil {
		return objstore.Object{}, err
	}
	return f.Store.Head(ctx, key)
}

func (f *flaky) DeleteBatch(ctx context.Context, keys []string) error {
	f.mu.Lock()
	f.batch = append(f.batch, keys)
	f.mu.Unlock()
	if err := f.fail("delete batch"); err != nil {
		return err
	}
	return f.Store.DeleteBatch(ctx, keys)
}

// List fails the first fails calls after delivering pagesBefore pages, as a
// page fetch failing midway through a listing.
func (f *flaky) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	return f.listing("list", func(page func() error) error {
		return f.Store.List(ctx, prefix, func(p objstore.Page) error {
			if err := page(); err != nil {
				return err
			}
			return fn(p)
		})
	})
}

func (f *flaky) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	return f.listing("walk", func(page func() error) error {
		return f.Store.Walk(ctx, prefix, func(objs []objstore.Object) error {
			if err := page(); err != nil {
				return err
			}
			return fn(objs)
		})
	})
}

// listing fails a failing call when it is about to fetch its second page
// (or at once when the listing has a single page).
func (f *flaky) listing(op string, run func(page func() error) error) error {
	err := f.fail(op)
	if err == nil {
		return run(func() error { return nil })
	}
	pages := 0
	if rerr := run(func() error {
		pages++
		if pages > 1 {
			return err
		}
		return nil
	}); rerr != nil {
		return rerr
	}
	return err
}

// fakeTime is a clock that only moves when the retry loop sleeps.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeTime() *fakeTime {
	return &fakeTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeTime) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeTime) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeTime) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// testOptions retry on errTransient with a fake clock and the largest
// jitter draw, so waits are deterministic.
func testOptions(clk *fakeTime) Options {
	return Options{
		IsTransient:    isTestTransient,
		InitialBackoff: 100 * time.Millisecond,
		MaxBackoff:     400 * time.Millisecond,
		MaxElapsed:     time.Minute,
		Sleep:          clk.Sleep,
		Now:            clk.Now,
		Rand:           func(n int64) int64 { return n - 1 },
	}
}
