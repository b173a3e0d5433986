package objstore

import (
	"context"
	"errors"
	"io"
	"net"
)

// This file owns the part of retry classification every backend shares:
// which sentinels are final, how a batch is judged from its keys, and that
// a failure with no answer from the server (a reset, an EOF) is worth a
// retry. A backend supplies only how it reads one server answer.

// ClassifyTransient reports whether err is worth retrying. A request the
// fence's time limit ended is (a retry asks the fence again); nil,
// cancellation, ErrFenced and the other sentinels are not; a batch is when
// every failed key is. Otherwise answer reads the server's reply: decided
// is false when err carries none, and then a network failure is transient.
func ClassifyTransient(err error, answer func(error) (transient, decided bool)) bool {
	switch {
	case errors.Is(err, ErrRequestDeadline):
		return true
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrFenced),
		errors.Is(err, ErrNotFound),
		errors.Is(err, ErrPrecondition),
		errors.Is(err, ErrInvalidKey):
		return false
	}
	var be *BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			if !ClassifyTransient(f.Err, answer) {
				return false
			}
		}
		return len(be.Failed) > 0
	}
	if transient, decided := answer(err); decided {
		return transient
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// ClassifyThrottle reports whether err is the store pushing back, as
// pushback reads one answer; a batch is when any failed key is, and nil or
// a cancellation never is.
func ClassifyThrottle(err error, pushback func(error) bool) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var be *BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			if ClassifyThrottle(f.Err, pushback) {
				return true
			}
		}
		return false
	}
	return pushback(err)
}
