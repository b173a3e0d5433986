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

// FenceRequest checks ctx's fence and returns the context to send one
// mutating request under: with the fence's time limit as its deadline (cause
// ErrRequestDeadline). Call the cancel func when the request is done, and
// pass its error through RequestError.
func FenceRequest(ctx context.Context) (context.Context, context.CancelFunc, error) {
	limit, err := CheckFence(ctx)
	if err != nil {
		return ctx, func() {}, err
	}
	if limit <= 0 {
		return ctx, func() {}, nil
	}
	rctx, cancel := context.WithTimeoutCause(ctx, limit, ErrRequestDeadline)
	return rctx, cancel, nil
}

// RequestError replaces the error of a request sent under rctx (from
// FenceRequest on ctx) by ErrRequestDeadline when the fence's time limit,
// not the caller, ended it: the caller's context is alive, so a retry may
// ask the fence again.
func RequestError(ctx, rctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), ErrRequestDeadline) {
		return fmt.Errorf("%w (%v)", ErrRequestDeadline, err)
	}
	return err
}
