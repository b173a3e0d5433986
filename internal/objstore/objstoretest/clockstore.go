package objstoretest

import (
	"context"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// ClockStore wraps a real store and lets a test move the store's clock
// forward without waiting: after Advance(d), Now reads d later, and every
// object written through the wrapper from then on carries the offset in its
// LastModified (Put*, and in Get, Head, List and Walk answers while its ETag
// is the one written). Objects written before, or by anything else, keep the
// inner store's LastModified: they were written earlier in the virtual time
// too. It only ever moves time forward, as a real clock does, so the inner
// store's own ordering of writes is kept.
//
// It is a fault injector around a real backend: the lease protocol decides
// takeovers and due-ness by the store's clock, and tests of frozen
// processes and skewed hosts need that clock to pass TTLs in microseconds.
type ClockStore struct {
	objstore.Store
	*Clock
}

// Clock is the moved clock of one or more ClockStores over the same
// objects (a test that opens the same root several times shares one, so a
// write through one wrapper is stamped for all).
type Clock struct {
	mu      sync.RWMutex // guards offset and written
	offset  time.Duration
	written map[string]stamp
	// keys holds one lock per key, held for writing across a write of that
	// key and its stamp, so a read that sees the new version waits for its
	// stamp while writes of other keys go on in parallel.
	keys sync.Map
}

func (c *Clock) keyLock(key string) *sync.RWMutex {
	l, _ := c.keys.LoadOrStore(key, &sync.RWMutex{})
	return l.(*sync.RWMutex)
}

// NewClock returns a clock that has not moved.
func NewClock() *Clock { return &Clock{written: map[string]stamp{}} }

// Wrap returns s behind this clock.
func (c *Clock) Wrap(s objstore.Store) *ClockStore { return &ClockStore{Store: s, Clock: c} }

// AdvanceTo moves the clock forward until this host's time plus the offset
// is at least t.
func (c *Clock) AdvanceTo(t time.Time) { c.Advance(time.Until(t) - c.Offset()) }

type stamp struct {
	etag   string
	offset time.Duration
}

var _ objstore.Store = (*ClockStore)(nil)

// NewClockStore wraps s behind a clock of its own.
func NewClockStore(s objstore.Store) *ClockStore { return NewClock().Wrap(s) }

// Unwrap returns the wrapped store.
func (c *ClockStore) Unwrap() objstore.Store { return c.Store }

// Advance moves the store's clock forward by d (d < 0 is ignored).
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Offset is how far the clock has been moved.
func (c *Clock) Offset() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.offset
}

// Now is the inner store's clock plus the offset.
func (c *ClockStore) Now(ctx context.Context) (time.Time, error) {
	now, err := c.Store.Now(ctx)
	if err != nil {
		return now, err
	}
	return now.Add(c.Offset()), nil
}

// write runs one write of key through the inner store and stamps it,
// holding the key's lock so that no read sees the new version without its
// stamp.
func (c *Clock) write(key string, fn func() (objstore.Object, error)) (objstore.Object, error) {
	kl := c.keyLock(key)
	kl.Lock()
	defer kl.Unlock()
	offset := c.Offset()
	obj, err := fn()
	if err != nil {
		return obj, err
	}
	c.mu.Lock()
	c.written[obj.Key] = stamp{etag: obj.ETag, offset: offset}
	c.mu.Unlock()
	obj.LastModified = obj.LastModified.Add(offset)
	return obj, nil
}

// shift applies the offset an object was written at.
func (c *Clock) shift(obj objstore.Object) objstore.Object {
	kl := c.keyLock(obj.Key)
	kl.RLock()
	defer kl.RUnlock()
	c.mu.RLock()
	st, ok := c.written[obj.Key]
	c.mu.RUnlock()
	if ok && st.etag == obj.ETag {
		obj.LastModified = obj.LastModified.Add(st.offset)
	}
	return obj
}

// Put writes through and stamps the write with the current offset.
func (c *ClockStore) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return c.write(key, func() (objstore.Object, error) { return c.Store.Put(ctx, key, body) })
}

// PutIfAbsent writes through and stamps the write with the current offset.
func (c *ClockStore) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return c.write(key, func() (objstore.Object, error) { return c.Store.PutIfAbsent(ctx, key, body) })
}

// PutIfMatch writes through and stamps the write with the current offset.
func (c *ClockStore) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	return c.write(key, func() (objstore.Object, error) { return c.Store.PutIfMatch(ctx, key, body, etag) })
}

// Get shifts LastModified of objects written through the wrapper.
func (c *ClockStore) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	body, obj, err := c.Store.Get(ctx, key, limit)
	return body, c.shift(obj), err
}

// Head shifts LastModified of objects written through the wrapper.
func (c *ClockStore) Head(ctx context.Context, key string) (objstore.Object, error) {
	obj, err := c.Store.Head(ctx, key)
	return c.shift(obj), err
}

// List shifts LastModified of objects written through the wrapper.
func (c *ClockStore) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	return c.Store.List(ctx, prefix, func(p objstore.Page) error {
		objs := make([]objstore.Object, len(p.Objects))
		for i, o := range p.Objects {
			objs[i] = c.shift(o)
		}
		p.Objects = objs
		return fn(p)
	})
}

// Walk shifts LastModified of objects written through the wrapper.
func (c *ClockStore) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	return c.Store.Walk(ctx, prefix, func(page []objstore.Object) error {
		objs := make([]objstore.Object, len(page))
		for i, o := range page {
			objs[i] = c.shift(o)
		}
		return fn(objs)
	})
}
