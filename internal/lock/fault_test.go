//go:build !fuzzonly

package lock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// errTimeout stands in for a transport failure whose outcome is unknown.
var errTimeout = errors.New("simulated timeout")

// landThenFail applies conditional writes but reports a timeout, as a
// request whose response was lost would.
type landThenFail struct {
	objstore.Store
	on atomic.Bool
}

func (s *landThenFail) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	obj, err := s.Store.PutIfAbsent(ctx, key, body)
	if err == nil && s.on.Load() {
		return objstore.Object{}, errTimeout
	}
	return obj, err
}

func (s *landThenFail) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	obj, err := s.Store.PutIfMatch(ctx, key, body, etag)
	if err == nil && s.on.Load() {
		return objstore.Object{}, errTimeout
	}
	return obj, err
}

// failWrites fails conditional writes without applying them while on.
type failWrites struct {
	objstore.Store
	on atomic.Bool
}

func (s *failWrites) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if s.on.Load() {
		return objstore.Object{}, errTimeout
	}
	return s.Store.PutIfAbsent(ctx, key, body)
}

func (s *failWrites) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if s.on.Load() {
		return objstore.Object{}, errTimeout
	}
	return s.Store.PutIfMatch(ctx, key, body, etag)
}

func TestAmbiguousCreateLanded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &landThenFail{Store: memstore.New()}
	s.on.Store(true)
	lease, err := longLocker(s).Acquire(ctx, testKey)
	require.NoError(t, err, "the write landed, so the lease is ours")
	stored, err := Read(ctx, s, testKey)
	require.NoError(t, err)
	require.Equal(t, lease.Info().Token, stored.Token)
	require.NoError(t, lease.Release(ctx), "release with the re-read ETag")
	_, err = Read(ctx, s, testKey)
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

func TestAmbiguousTakeoverLanded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := objstoretest.NewClockStore(memstore.New())
	s := &landThenFail{Store: cs}
	dead := deadInfo(3)
	writeLease(t, s, testKey, dead)
	expire(cs, dead.TTL)
	s.on.Store(true)
	lease, err := longLocker(s).Acquire(ctx, testKey)
	require.NoError(t, err)
	require.Equal(t, int64(4), lease.Info().Generation)
	require.NoError(t, lease.Release(ctx))
}

func TestAmbiguousRenewalLanded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &landThenFail{Store: memstore.New()}
	lk := shortLocker(s)
	lease, err := lk.Acquire(ctx, testKey)
	require.NoError(t, err)
	first := lease.Info()
	s.on.Store(true)
	eventually(t, "renewals past the first expiry", func() bool {
		return time.Now().After(first.ExpiresAt.Add(lk.RenewInterval))
	})
	require.NoError(t, lease.Check(), "renewals that landed keep the lease")
	require.True(t, lease.Info().ExpiresAt.After(first.ExpiresAt))
	require.NoError(t, lease.Release(ctx))
}

func TestFailedCreateIsNotHeld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &failWrites{Store: memstore.New()}
	s.on.Store(true)
	lease, err := longLocker(s).Acquire(ctx, testKey)
	require.Nil(t, lease)
	require.ErrorIs(t, err, errTimeout)
	require.ErrorContains(t, err, "create lock")
}

func TestRenewalFailuresLoseAtDeadline(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &failWrites{Store: memstore.New()}
	lease, err := shortLocker(s).Acquire(ctx, testKey)
	require.NoError(t, err)
	s.on.Store(true)
	waitDone(t, lease.Context(), "the deadline to pass without renewal")
	lostAt := time.Now()
	err = lease.Check()
	require.ErrorIs(t, err, ErrLost)
	require.ErrorContains(t, err, "not renewed within")
	require.True(t, lostAt.Before(lease.Info().ExpiresAt), "lost before the written expiry (drift margin)")

	// Nobody else wrote the lease, so release still removes it but reports
	// that it had been lost.
	err = lease.Release(ctx)
	require.ErrorIs(t, err, ErrLost)
	_, err = Read(ctx, s, testKey)
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

func TestHolderClockJumpLosesLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var skew atomic.Int64
	lk := longLocker(memstore.New())
	lk.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	lease, err := lk.Acquire(ctx, testKey)
	require.NoError(t, err)
	require.NoError(t, lease.Check())

	// The process was frozen past its deadline: timers did not fire, but
	// its clock (CLOCK_BOOTTIME in production) moved. Check notices at once.
	skew.Store(int64(lk.TTL))
	require.ErrorIs(t, lease.Check(), ErrLost)
	waitDone(t, lease.Context(), "context cancelled after the clock jump")
	require.ErrorIs(t, lease.Release(ctx), ErrLost)
}

func TestWatcherNoticesClockJump(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	lk := longLocker(memstore.New())
	lk.Margin = 20 * time.Millisecond // the watcher polls every Margin/4
	lk.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	lease, err := lk.Acquire(t.Context(), testKey)
	require.NoError(t, err)
	skew.Store(int64(lk.TTL))
	// Nobody calls Check: the deadline watcher must cancel the context.
	waitDone(t, lease.Context(), "watcher to notice the jump")
	require.ErrorIs(t, context.Cause(lease.Context()), ErrLost)
	_ = lease.Release(t.Context())
}
