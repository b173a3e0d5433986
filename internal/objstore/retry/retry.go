// Package retry wraps an objstore.Store with retries of transient failures:
// exponential backoff with full jitter under a total-time cap, no attempt on
// a cancelled context, permanent errors returned at once, a callback per
// retry, listings that never deliver an entry twice, batch deletes that retry
// only the keys that failed, and conditional writes that check whether a
// timed-out attempt landed before calling a later conflict lost.
//
// A shared Pacer slows the whole pass while the store pushes back; lease
// traffic (Options.Unpaced) bypasses it so renewals never queue behind bulk
// work.
package retry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Store is the retrying wrapper. It is safe for concurrent use.
type Store struct {
	inner     objstore.Store
	opts      Options
	pushbacks atomic.Uint64
}

var _ objstore.Store = (*Store)(nil)

// Wrap returns s with retries. It panics if opts.IsTransient is nil: a
// missing classifier is a wiring bug, and guessing would retry blindly.
func Wrap(s objstore.Store, opts Options) objstore.Store {
	return &Store{inner: s, opts: opts.withDefaults()}
}

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() objstore.Store { return s.inner }

// URI is the inner store's URI.
func (s *Store) URI() string { return s.inner.URI() }

// finalError carries an error the loop must return without classifying it:
// a listing callback's own error, or a pacer wait cut short.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// transient reports whether err is worth another attempt. The sentinels and
// cancellation are final whatever the classifier says; a *BatchError is
// transient only when every failed key is.
func (s *Store) transient(err error) bool {
	switch {
	case errors.Is(err, objstore.ErrRequestDeadline):
		// The fence's time limit ended the attempt, not the caller: the
		// retry asks the fence again before sending anything.
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, objstore.ErrInvalidKey), errors.Is(err, objstore.ErrFenced):
		return false
	}
	var be *objstore.BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			if !s.transient(f.Err) {
				return false
			}
		}
		return len(be.Failed) > 0
	}
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrPrecondition) {
		return false
	}
	return s.opts.IsTransient(err)
}

// do runs fn until it succeeds, fails permanently, the context ends or
// MaxElapsed (MisconfiguredMaxElapsed for a misconfiguration) is spent. It returns the number of attempts made, so callers
// know whether an earlier attempt failed transiently (attempts > 1).
//
// The budget runs from the first failure, not from the call: the pacer's
// wait before the first attempt and a long first attempt that worked (a
// walk of many pages) are not failing time, and counting them made such an
// operation give up on its first transient error without a single retry.
// A connect that nothing answered (objstore.DialTimeoutError) failed from
// its start: its wait counts.
func (s *Store) do(ctx context.Context, op, key string, fn func(context.Context) error) (int, error) {
	var failingSince time.Time
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return attempt - 1, err
		}
		if err := s.pace(ctx, key); err != nil {
			return attempt - 1, err
		}
		err := fn(ctx)
		if err == nil {
			s.succeeded(key)
			return attempt, nil
		}
		if fe := (*finalError)(nil); errors.As(err, &fe) {
			return attempt, fe.err
		}
		if ctx.Err() != nil || !s.transient(err) {
			return attempt, err
		}
		if s.opts.IsThrottle(err) {
			s.throttled(key)
		}
		if failingSince.IsZero() {
			failingSince = s.opts.Now()
			// A connect nothing answered was failing from its start.
			if dt := (*objstore.DialTimeoutError)(nil); errors.As(err, &dt) {
				failingSince = failingSince.Add(-dt.Limit)
			}
		}
		budget := s.opts.MaxElapsed
		if errors.Is(err, objstore.ErrMisconfigured) {
			budget = min(budget, s.opts.MisconfiguredMaxElapsed)
		}
		remaining := budget - s.opts.Now().Sub(failingSince)
		if remaining <= 0 {
			return attempt, fmt.Errorf("%s %q: gave up after %d attempts: %w", op, key, attempt, err)
		}
		wait := min(s.opts.backoff(attempt), remaining)
		if s.opts.OnRetry != nil {
			s.opts.OnRetry(ctx, op, key, attempt, err, wait)
		}
		if serr := s.opts.Sleep(ctx, wait); serr != nil {
			return attempt, fmt.Errorf("%s %q: %w (last error: %w)", op, key, serr, err)
		}
	}
}

// Get retries transient failures.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	var body []byte
	var obj objstore.Object
	_, err := s.do(ctx, "get", key, func(ctx context.Context) (err error) {
		body, obj, err = s.inner.Get(ctx, key, limit)
		return err
	})
	return body, obj, err
}

// Head retries transient failures.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	var obj objstore.Object
	_, err := s.do(ctx, "head", key, func(ctx context.Context) (err error) {
		obj, err = s.inner.Head(ctx, key)
		return err
	})
	return obj, err
}

// Put retries transient failures; an unconditional write is idempotent.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	var obj objstore.Object
	_, err := s.do(ctx, "put", key, func(ctx context.Context) (err error) {
		obj, err = s.inner.Put(ctx, key, body)
		return err
	})
	return obj, err
}

// Delete retries transient failures; deleting a missing key succeeds, so a
// delete that landed before its answer was lost is harmless to repeat.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.do(ctx, "delete", key, func(ctx context.Context) error {
		return s.inner.Delete(ctx, key)
	})
	return err
}

// Now retries transient failures of the request a backend may send to read
// its clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	_, err := s.do(ctx, "now", "", func(ctx context.Context) (err error) {
		now, err = s.inner.Now(ctx)
		return err
	})
	return now, err
}

// PruneEmpty retries transient failures; removing empty directories is
// idempotent.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	_, err := s.do(ctx, "prune empty", prefix, func(ctx context.Context) error {
		return s.inner.PruneEmpty(ctx, prefix)
	})
	return err
}
