package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Lease is one holding of the lock. It renews itself in the background until
// Release, or until it is lost.
type Lease struct {
	c   config
	key string

	ctx    context.Context
	cancel context.CancelCauseFunc // cancels ctx, the holder's work context
	stop   context.CancelFunc      // stops the background goroutines
	wg     sync.WaitGroup

	mu       sync.Mutex
	info     Info
	etag     string
	deadline time.Time // wall clock: ExpiresAt - DriftMargin
	lost     error     // non-nil once lost; wraps ErrLost

	releaseOnce sync.Once
	releaseErr  error
}

// start wraps a freshly written lease and launches its renewer and deadline
// watcher. The goroutines run on a context detached from ctx so a caller
// that cancels its work still holds the lease until it calls Release.
func (c *config) start(ctx context.Context, key string, info Info, etag, event string) *Lease {
	l := &Lease{c: c.clone(), key: key, info: info, etag: etag, deadline: info.ExpiresAt.Add(-c.driftMargin)}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.stop = stop
	l.wg.Add(2)
	go l.renewLoop(bg)
	go l.watchDeadline(bg)
	l.c.log.Info(event, l.attrs()...)
	return l
}

func (c *config) clone() config { return *c }

func (l *Lease) attrs() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return []any{logKey, l.key, logOwner, l.info.Owner, logGeneration, l.info.Generation}
}

// Context is cancelled when the lease is lost or released (or when the
// context given to Acquire is done). Run destructive work under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Info is the lease as last written by this holder.
func (l *Lease) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Check returns nil while the lease is held and an error wrapping ErrLost
// once it is lost or released. It also compares the wall clock with the
// deadline itself, so a check right after a machine resumes from sleep fails
// even before the watcher has noticed.
func (l *Lease) Check() error {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// lose marks the lease lost (first reason wins) and cancels its context.
func (l *Lease) lose(err error) {
	l.mu.Lock()
	first := l.lost == nil
	if first {
		l.lost = err
	}
	l.mu.Unlock()
	if first {
		l.cancel(err)
		l.c.log.Warn("lease lost", append(l.attrs(), "error", err)...)
	}
}

// checkDeadline loses the lease when the wall clock has reached the deadline
// without a successful renewal.
func (l *Lease) checkDeadline() {
	now := l.c.wallNow()
	l.mu.Lock()
	deadline, lost := l.deadline, l.lost != nil
	l.mu.Unlock()
	if !lost && !now.Before(deadline) {
		l.lose(fmt.Errorf("lock %q: %w: not renewed before %s (expiry minus drift margin)",
			l.key, ErrLost, deadline.UTC().Format(time.RFC3339Nano)))
	}
}

// watchDeadline polls the wall clock. A monotonic timer set for the deadline
// would fire late after a machine sleeps; a rival's clock would not.
func (l *Lease) watchDeadline(ctx context.Context) {
	defer l.wg.Done()
	every := max(min(l.c.driftMargin/2, time.Second), time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.Check() != nil {
				return
			}
		}
	}
}

// renewLoop renews every RenewInterval until stopped or lost.
func (l *Lease) renewLoop(ctx context.Context) {
	defer l.wg.Done()
	t := time.NewTicker(l.c.renewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if l.Check() != nil {
			return
		}
		if err := l.renew(ctx); err != nil {
			if errors.Is(err, ErrLost) {
				l.lose(err)
				return
			}
			if ctx.Err() == nil {
				l.c.log.Warn("renew lease", append(l.attrs(), "error", err)...)
			}
		}
	}
}

// renew rewrites the lease with a later expiry and a fresh nonce, on the
// condition that it is still the version we last wrote. The request may take
// at most until the deadline: later, it could not save the lease anyway.
func (l *Lease) renew(ctx context.Context) error {
	now := l.c.wallNow()
	l.mu.Lock()
	info, etag, deadline := l.info, l.etag, l.deadline
	l.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, deadline.Sub(now))
	defer cancel()

	at := time.UnixMilli(now.UnixMilli())
	info.RenewedAt, info.ExpiresAt = at, at.Add(l.c.ttl)
	body, err := encode(info)
	if err != nil {
		return err
	}
	obj, err := l.c.store.PutIfMatch(rctx, l.key, body, etag)
	switch {
	case err == nil:
		l.adopt(info, obj.ETag)
		return nil
	case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("lock %q: %w: renewal refused, the lease was replaced or deleted: %w", l.key, ErrLost, err)
	}
	// Ambiguous: the write may have landed. If the stored lease still
	// carries our token it is ours, whichever version it is.
	data, cur, gerr := l.c.store.Get(rctx, l.key)
	if gerr != nil {
		return fmt.Errorf("renew lock %q: %w", l.key, err)
	}
	stored, perr := Parse(data)
	if perr != nil || stored.Token != info.Token {
		return fmt.Errorf("lock %q: %w: renewal failed (%v) and the lease now belongs to someone else", l.key, ErrLost, err)
	}
	l.adopt(stored, cur.ETag)
	return nil
}

// adopt records a successful write as our current version of the lease.
func (l *Lease) adopt(info Info, etag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.info, l.etag = info, etag
	l.deadline = info.ExpiresAt.Add(-l.c.driftMargin)
}

// Release stops renewing and deletes the lease if it is still the version we
// wrote. It runs on a fresh context with a short timeout, so a cancelled
// caller still frees the lock. If the lease was already lost the error wraps
// ErrLost. Calling Release again returns the first result.
func (l *Lease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() {
		l.stop()
		l.wg.Wait()
		l.releaseErr = l.release(ctx)
		l.mu.Lock()
		if l.lost == nil {
			l.lost = fmt.Errorf("lock %q: %w: released", l.key, ErrLost)
		}
		cause := l.lost
		l.mu.Unlock()
		l.cancel(cause)
	})
	return l.releaseErr
}

func (l *Lease) release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	l.mu.Lock()
	info, etag, lost := l.info, l.etag, l.lost
	l.mu.Unlock()

	err := l.c.store.DeleteIfMatch(rctx, l.key, etag)
	if errors.Is(err, objstore.ErrPrecondition) {
		// A renewal cancelled by Release may still have landed: if the
		// stored lease carries our token, delete that version.
		if data, cur, gerr := l.c.store.Get(rctx, l.key); gerr == nil {
			if stored, perr := Parse(data); perr == nil && stored.Token == info.Token {
				err = l.c.store.DeleteIfMatch(rctx, l.key, cur.ETag)
			}
		}
	}
	switch {
	case err == nil && lost == nil:
		l.c.log.Info("released", l.attrs()...)
		return nil
	case err == nil:
		return fmt.Errorf("release lock %q: deleted, but %w", l.key, lost)
	case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("release lock %q: %w: the lease had been replaced or deleted: %w", l.key, ErrLost, err)
	default:
		return fmt.Errorf("release lock %q: %w", l.key, err)
	}
}

// Read returns the lease stored at key, for status output. A missing lease
// is an error wrapping objstore.ErrNotFound.
func Read(ctx context.Context, s objstore.Store, key string) (Info, error) {
	data, _, err := s.Get(ctx, key)
	if err != nil {
		return Info{}, fmt.Errorf("read lock %q: %w", key, err)
	}
	info, err := Parse(data)
	if err != nil {
		return Info{}, fmt.Errorf("read lock %q: %w", key, err)
	}
	return info, nil
}
