package objstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// This file owns the fence: how a lease holder's right to mutate reaches the
// backend that sends the request. A holder may lose its lease while it is
// paused anywhere above the backend (a retry's backoff, a queue, a stalled
// process); only a check made immediately before the request, below every
// wrapper, sees that. The lease (package lock) implements Fence; the
// lifecycle puts it into the context of all work under the lease.

var (
	// ErrFenced: the context's fence refused a mutating request; nothing
	// more was sent. It is final: a retry would be refused too.
	ErrFenced = errors.New("fenced: the lease no longer allows mutating requests")
	// ErrRequestDeadline: a fenced request took longer than the fence
	// allows, so it was abandoned. It is transient: a retry asks the fence
	// again and is sent only if the lease still allows it.
	ErrRequestDeadline = errors.New("mutating request exceeded its fence deadline")
)

// Fence decides whether a mutating request may still be sent.
type Fence interface {
	// Allow returns nil while a mutating request may be sent now, together
	// with the longest such a request may take (0: no limit); an error once
	// no request may be sent.
	Allow() (time.Duration, error)
}

type fenceKey struct{}

// WithFence returns ctx carrying f; mutating calls made with it ask f first.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// CheckFence asks ctx's fence, if any, whether a mutating request may be
// sent now. Backends call it immediately before each request or syscall.
// The error wraps ErrFenced and the fence's own error.
func CheckFence(ctx context.Context) (time.Duration, error) {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	if f == nil {
		return 0, nil
	}
	limit, err := f.Allow()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return limit, nil
}

// Fenced sends one mutating request of an HTTP backend: send must do
// nothing but make the client call with the context it is given, so that
// the fence's check is the last thing before the request. A refusing fence
// sends nothing and returns an error wrapping ErrFenced. The request runs
// under the fence's time limit, if any, as its deadline; a request that
// limit ended while ctx is alive returns ErrRequestDeadline (transient: a
// retry asks the fence again and is sent only if the lease still allows
// it). Through NewHTTPTransport the limit is checked once more on the
// connection, immediately before the request is written (wirefence.go).
func Fenced(ctx context.Context, send func(rctx context.Context) error) error {
	limit, err := CheckFence(ctx)
	if err != nil {
		return err
	}
	if limit <= 0 {
		return send(ctx)
	}
	by := time.Now().Add(limit) // monotonic, as the fence's own limit
	rctx, cancel := context.WithTimeoutCause(ctx, limit, ErrRequestDeadline)
	defer cancel()
	rctx, refused, done := withWireDeadline(rctx, by)
	defer done()
	err = send(rctx)
	if err != nil && ctx.Err() == nil && (refused() || errors.Is(context.Cause(rctx), ErrRequestDeadline)) {
		return fmt.Errorf("%w (%v)", ErrRequestDeadline, err)
	}
	return err
}

// PruneFlat is PruneEmpty for a store without directories (a flat
// namespace: S3, GCS, Blob Storage), where there is nothing to remove: a
// "folder" object is an object, walked and deleted as such. It still
// checks the prefix and refuses under a refusing fence, as every mutating
// call does, so callers see the same contract on every backend.
func PruneFlat(ctx context.Context, prefix string) error {
	if err := ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("prune empty %s: %w", prefix, err)
	}
	if _, err := CheckFence(ctx); err != nil {
		return fmt.Errorf("prune empty %s: %w", prefix, err)
	}
	return nil
}
