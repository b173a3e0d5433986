package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Lease is one holding of the lock. It renews itself in the background until
// Release, or until it is lost. It is the fence of all work under it: its
// Context carries it, and every backend asks Allow immediately before each
// mutating request.
type Lease struct {
	c   locker
	key string

	ctx    context.Context
	cancel context.CancelCauseFunc // cancels ctx, the holder's work context
	// logCtx carries the values of the context given to Acquire (the
	// table, the pass) but never ends: every line about the lease, from
	// the renewer to Release, is logged with it.
	logCtx context.Context
	stop   context.CancelFunc // stops the background goroutines
	wg     sync.WaitGroup

	mu       sync.Mutex
	info     Info
	etag     string
	deadline time.Time // holder's clock: sent + TTL - Margin of the last successful write
	lost     error     // non-nil once lost; wraps ErrLost

	releaseOnce sync.Once
	releaseErr  error
}

var _ objstore.Fence = (*Lease)(nil)

// start wraps a freshly written lease, sent at sent by the holder's clock,
// and launches its renewer and deadline watcher. The goroutines run on a
// context detached from ctx so a caller that cancels its work still holds
// the lease until it calls Release.
func (c *locker) start(ctx context.Context, key string, info Info, etag string, sent time.Time, event string) *Lease {
	l := &Lease{c: c.clone(), key: key, info: info, etag: etag, deadline: c.deadlineAfter(sent),
		logCtx: context.WithoutCancel(ctx)}
	work, cancel := context.WithCancelCause(ctx)
	l.ctx, l.cancel = objstore.WithFence(work, l), cancel
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.stop = stop
	l.wg.Add(2)
	go l.renewLoop(bg)
	go l.watchDeadline(bg)
	l.c.log.InfoContext(l.logCtx, event, l.attrs()...)
	return l
}

func (c *locker) clone() locker { return *c }

// deadlineAfter is the holder's last instant for mutating requests after a
// lease write sent at sent: the store stamped the write no earlier than
// that, and no contender takes over before TTL (plus resolution and skew)
// after the stamp; Margin leaves room for a request already in flight
// (at most RequestTimeout).
func (c *locker) deadlineAfter(sent time.Time) time.Time {
	return sent.Add(c.ttl - c.margin)
}

func (l *Lease) attrs() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return []any{logLease, l.key, logOwner, l.info.Owner, logGeneration, l.info.Generation}
}

// Context is cancelled when the lease is lost or released (or when the
// context given to Acquire is done). It carries the lease as its fence: run
// all work under the lease with it.
func (l *Lease) Context() context.Context { return l.ctx }

// Info is the lease as last written by this holder.
func (l *Lease) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Check returns nil while the lease is held and an error wrapping ErrLost
// once it is lost or released. It reads the holder's clock itself, so a
// check right after the process resumes from a pause fails even before the
// watcher has run.
func (l *Lease) Check() error {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Allow implements objstore.Fence: a mutating request may be sent while the
// lease is held, and may take at most RequestTimeout.
func (l *Lease) Allow() (time.Duration, error) {
	if err := l.Check(); err != nil {
		return 0, err
	}
	return l.c.requestTimeout, nil
}

// Verify checks the lease against the store, not only in memory: the
// stored lease must still be the version this holder wrote (or carry its
// token, after a renewal whose answer was lost), and the store's clock
// must not have passed that version's LastModified + TTL - Margin. The
// second check is a deadline independent of the holder's own clock: a VM
// paused by its hypervisor (CLOCK_BOOTTIME does not count that), or a wall
// clock stepped under a local root, cannot make the holder outlive its
// lease by more than the store's clock lags. Anything else loses the
// lease. It costs one request (the store's clock comes with its answer),
// two after an ambiguous renewal.
func (l *Lease) Verify(ctx context.Context) error {
	if err := l.Check(); err != nil {
		return err
	}
	l.mu.Lock()
	etag, token := l.etag, l.info.Token
	l.mu.Unlock()
	obj, err := l.c.store.Head(ctx, l.key)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		l.lose(fmt.Errorf("lock %q: %w: the lease object is gone from the store", l.key, ErrLost))
		return l.Check()
	case err != nil:
		return fmt.Errorf("verify lock %q: %w", l.key, err)
	case obj.ETag == etag:
		return l.checkStoreDeadline(ctx, obj.LastModified)
	}
	data, cur, err := l.c.store.Get(ctx, l.key, MaxLeaseBytes)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("verify lock %q: %w", l.key, err)
	}
	stored, perr := Parse(data)
	if err != nil || perr != nil || stored.Token != token {
		l.lose(fmt.Errorf("lock %q: %w: the store holds another lease now (replaced or taken over)", l.key, ErrLost))
		return l.Check()
	}
	// A renewal we gave up on landed. Its deadline would count from its
	// send time, later than the one we keep: keeping ours is conservative.
	l.mu.Lock()
	l.info, l.etag = stored, cur.ETag
	l.mu.Unlock()
	return l.checkStoreDeadline(ctx, cur.LastModified)
}

// VerifyListed is Verify with the lease's object as a read the caller just
// made returned it (found false: the read did not hold it), so a caller
// that reads the lease together with other objects (one listing of a
// table's control objects) pays no request of its own for it. Only the
// answer Verify would accept at once is taken from obj: the holder's own
// ETag. Anything else (no object, an empty or another ETag) is judged by
// Verify itself, reading the store: a lease gone or replaced is lost
// exactly as there.
func (l *Lease) VerifyListed(ctx context.Context, obj objstore.Object, found bool) error {
	if err := l.Check(); err != nil {
		return err
	}
	l.mu.Lock()
	etag := l.etag
	l.mu.Unlock()
	if !found || obj.Key != l.key || obj.ETag == "" || obj.ETag != etag {
		return l.Verify(ctx)
	}
	return l.checkStoreDeadline(ctx, obj.LastModified)
}

// checkStoreDeadline loses the lease when the store's clock (a lower bound,
// read with the lease) has reached lm + TTL - Margin, lm being the store's
// stamp of the holder's current version. While the holder's own clock is
// right, its deadline comes first; this one catches a holder whose clock
// stopped while the store's ran on.
func (l *Lease) checkStoreDeadline(ctx context.Context, lm time.Time) error {
	now, err := l.c.store.Now(ctx)
	if err != nil {
		return fmt.Errorf("verify lock %q: %w", l.key, err)
	}
	if end := lm.Add(l.c.ttl - l.c.margin); !now.Before(end) {
		l.lose(fmt.Errorf("lock %q: %w: the store's clock (%s) has passed the lease's last write plus TTL minus margin (%s): this process was frozen longer than its own clock shows",
			l.key, ErrLost, now.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)))
	}
	return l.Check()
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
		l.c.log.WarnContext(l.logCtx, "lease lost", append(l.attrs(), "error", err)...)
	}
}

// checkDeadline loses the lease when the holder's clock has reached the
// deadline without a successful renewal.
func (l *Lease) checkDeadline() {
	now := l.c.elapsed()
	l.mu.Lock()
	deadline, lost := l.deadline, l.lost != nil
	l.mu.Unlock()
	if !lost && !now.Before(deadline) {
		l.lose(fmt.Errorf("lock %q: %w: not renewed within TTL minus margin (%s) of its last write (paused, or the store unreachable)",
			l.key, ErrLost, l.c.ttl-l.c.margin))
	}
}

// watchDeadline polls the holder's clock, so the work context is cancelled
// soon after the deadline even while nothing asks Check.
func (l *Lease) watchDeadline(ctx context.Context) {
	defer l.wg.Done()
	every := max(min(l.c.margin/4, time.Second), time.Millisecond)
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
			if errors.Is(err, objstore.ErrRootChanged) {
				// The lease's key now resolves in another directory: no
				// renewal can reach this lease again, and the loss says why.
				l.lose(fmt.Errorf("lock %q: %w: %w", l.key, ErrLost, err))
				return
			}
			if ctx.Err() == nil {
				l.c.log.WarnContext(l.logCtx, "renew lease", append(l.attrs(), "error", err)...)
			}
		}
	}
}

// renew rewrites the lease with a fresh nonce, on the condition that it is
// still the version we last wrote. The request may take at most until the
// deadline: later, it could not save the lease anyway.
func (l *Lease) renew(ctx context.Context) error {
	sent := l.c.elapsed()
	l.mu.Lock()
	info, etag, deadline := l.info, l.etag, l.deadline
	l.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, deadline.Sub(sent))
	defer cancel()

	if storeNow, err := l.c.store.Now(rctx); err == nil {
		at := time.UnixMilli(storeNow.UnixMilli())
		info.RenewedAt, info.ExpiresAt = at, at.Add(l.c.ttl)
	}
	body, err := encode(info)
	if err != nil {
		return err
	}
	obj, err := l.c.store.PutIfMatch(rctx, l.key, body, etag)
	switch {
	case err == nil:
		l.adopt(info, obj.ETag, sent)
		return nil
	case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("lock %q: %w: renewal refused, the lease was replaced or deleted: %w", l.key, ErrLost, err)
	}
	// Ambiguous: the write may have landed. If the stored lease still
	// carries our token it is ours. If it is this very write (the nonce
	// makes its bytes unique), it was stamped after sent like any
	// successful write; otherwise the deadline stays the earlier one.
	data, cur, gerr := l.c.store.Get(rctx, l.key, MaxLeaseBytes)
	if gerr != nil {
		return fmt.Errorf("renew lock %q: %w", l.key, err)
	}
	stored, perr := Parse(data)
	if perr != nil || stored.Token != info.Token {
		return fmt.Errorf("lock %q: %w: renewal failed (%v) and the lease now belongs to someone else", l.key, ErrLost, err)
	}
	if bytes.Equal(data, body) {
		l.adopt(stored, cur.ETag, sent)
		return nil
	}
	l.mu.Lock()
	l.info, l.etag = stored, cur.ETag
	l.mu.Unlock()
	return nil
}

// adopt records a successful write, sent at sent, as our current version.
func (l *Lease) adopt(info Info, etag string, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.info, l.etag = info, etag
	l.deadline = l.c.deadlineAfter(sent)
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
		if data, cur, gerr := l.c.store.Get(rctx, l.key, MaxLeaseBytes); gerr == nil {
			if stored, perr := Parse(data); perr == nil && stored.Token == info.Token {
				err = l.c.store.DeleteIfMatch(rctx, l.key, cur.ETag)
			}
		}
	}
	switch {
	case err == nil && lost == nil:
		l.c.log.InfoContext(l.logCtx, "released", l.attrs()...)
		return nil
	case err == nil:
		return fmt.Errorf("release lock %q: deleted, but %w", l.key, lost)
	case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("release lock %q: %w: the lease had been replaced or deleted: %w", l.key, ErrLost, err)
	default:
		return fmt.Errorf("release lock %q: %w", l.key, err)
	}
}

// Read returns the lease stored at key with its LastModified (Info.Modified),
// for status output and sweeps. A missing lease is an error wrapping
// objstore.ErrNotFound.
func Read(ctx context.Context, s objstore.Store, key string) (Info, error) {
	data, obj, err := s.Get(ctx, key, MaxLeaseBytes)
	if err != nil {
		return Info{}, fmt.Errorf("read lock %q: %w", key, err)
	}
	info, err := Parse(data)
	if err != nil {
		return Info{}, fmt.Errorf("read lock %q: %w", key, err)
	}
	info.Modified = obj.LastModified
	return info, nil
}
