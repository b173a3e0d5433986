package objstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var errLeaseGone = errors.New("lease gone")

// fence answers every Allow with limit and err.
type fence struct {
	limit time.Duration
	err   error
}

func (f fence) Allow() (time.Duration, error) { return f.limit, f.err }

// TestFenced pins the one fence every HTTP backend sends its mutating
// requests through: a refusing fence sends nothing; the fence's time limit
// becomes the request's deadline, and a request it ended reads as
// ErrRequestDeadline (retried: the retry asks the fence again), while one
// the caller ended keeps the caller's error (never retried).
func TestFenced(t *testing.T) {
	errSend := errors.New("send failed")
	for _, tc := range []struct {
		name     string
		fence    *fence
		cancel   bool // the caller's context ends while the request waits
		send     func(rctx context.Context) error
		wantSent bool
		wantIs   []error
		wantNot  []error
		deadline bool // the request's context carries a deadline
	}{
		{name: "no fence: sent as is", send: func(context.Context) error { return nil }, wantSent: true},
		{name: "no fence: the request's error unchanged", send: func(context.Context) error { return errSend }, wantSent: true, wantIs: []error{errSend}, wantNot: []error{objstore.ErrRequestDeadline}},
		{name: "fence allows without a limit", fence: &fence{}, send: func(context.Context) error { return nil }, wantSent: true},
		{name: "fence refuses: nothing sent", fence: &fence{err: errLeaseGone}, send: func(context.Context) error { return nil }, wantIs: []error{objstore.ErrFenced, errLeaseGone}},
		{name: "limit ends the request", fence: &fence{limit: time.Millisecond}, send: waitDone, wantSent: true, deadline: true,
			wantIs: []error{objstore.ErrRequestDeadline}, wantNot: []error{objstore.ErrFenced}},
		{name: "limit set, the request ends in time", fence: &fence{limit: time.Hour}, send: func(context.Context) error { return errSend }, wantSent: true, deadline: true,
			wantIs: []error{errSend}, wantNot: []error{objstore.ErrRequestDeadline}},
		{name: "the caller cancels: its error, not the fence's", fence: &fence{limit: time.Hour}, cancel: true, send: waitDone, wantSent: true, deadline: true,
			wantIs: []error{context.Canceled}, wantNot: []error{objstore.ErrRequestDeadline}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.fence != nil {
				ctx = objstore.WithFence(ctx, *tc.fence)
			}
			sent, hadDeadline := false, false
			err := objstore.Fenced(ctx, func(rctx context.Context) error {
				sent = true
				_, hadDeadline = rctx.Deadline()
				if tc.cancel {
					cancel()
				}
				return tc.send(rctx)
			})
			require.Equal(t, tc.wantSent, sent, "sent")
			require.Equal(t, tc.deadline, hadDeadline, "the request's deadline")
			if len(tc.wantIs) == 0 {
				require.NoError(t, err)
			}
			for _, want := range tc.wantIs {
				require.ErrorIs(t, err, want)
			}
			for _, not := range tc.wantNot {
				require.NotErrorIs(t, err, not)
			}
		})
	}
}

// waitDone is a request that lasts until its context ends.
func waitDone(rctx context.Context) error {
	<-rctx.Done()
	return rctx.Err()
}

// TestPruneFlat: on a store without directories the prune removes nothing
// but keeps the contract of a mutating call: a bad prefix and a refusing
// fence are errors.
func TestPruneFlat(t *testing.T) {
	ctx := t.Context()
	require.NoError(t, objstore.PruneFlat(ctx, "t.lance/"))
	require.NoError(t, objstore.PruneFlat(ctx, ""), "the root")
	require.ErrorIs(t, objstore.PruneFlat(ctx, "a/../b/"), objstore.ErrInvalidKey)
	err := objstore.PruneFlat(objstore.WithFence(ctx, fence{err: errLeaseGone}), "t.lance/")
	require.ErrorIs(t, err, objstore.ErrFenced)
	require.ErrorContains(t, err, "prune empty t.lance/")
}
