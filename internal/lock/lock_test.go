package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

const testKey = "locks/lifecycle.lock"

func TestAcquireReleaseReacquire(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		lk := longLocker(s)
		lk.Owner = "first"

		lease, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err)
		require.NoError(t, lease.Check())
		info := lease.Info()
		require.Equal(t, "first", info.Owner)
		require.Equal(t, int64(1), info.Generation)
		require.Len(t, info.Token, 32)

		stored, err := Read(ctx, s, testKey)
		require.NoError(t, err)
		require.Equal(t, info, stored, "stored lease: got/want")

		require.NoError(t, lease.Release(ctx))
		require.NoError(t, lease.Release(ctx), "second release returns the first result")
		require.ErrorIs(t, lease.Check(), ErrLost, "check after release")
		require.ErrorIs(t, context.Cause(lease.Context()), ErrLost, "context after release")
		_, err = Read(ctx, s, testKey)
		require.ErrorIs(t, err, objstore.ErrNotFound, "lease after release")

		again, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err, "reacquire")
		require.NotEqual(t, info.Token, again.Info().Token, "new token per holding")
		require.Equal(t, int64(1), again.Info().Generation, "a released lease starts over")
		require.NoError(t, again.Release(ctx))
	})
}

func TestSecondAcquirerIsLocked(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		holder := longLocker(s)
		holder.Owner = "holder-host/1/aa"
		lease, err := holder.Acquire(ctx, testKey)
		require.NoError(t, err)
		defer func() { require.NoError(t, lease.Release(ctx)) }()

		rival := longLocker(s)
		rival.Owner = "rival"
		got, err := rival.Acquire(ctx, testKey)
		require.Nil(t, got)
		require.ErrorIs(t, err, ErrLocked)
		var le *LockedError
		require.ErrorAs(t, err, &le)
		require.Equal(t, testKey, le.Key)
		require.Equal(t, lease.Info(), le.Holder, "holder info: got/want")
		msg := err.Error()
		require.Contains(t, msg, "holder-host/1/aa")
		require.Contains(t, msg, le.Holder.ExpiresAt.UTC().Format(time.RFC3339))
		require.Contains(t, msg, "the lease expires by itself")
		require.NoError(t, lease.Check(), "the holder is unaffected")
	})
}

func TestRenewalKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		lk := shortLocker(s)
		lease, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err)
		first := lease.Info()

		// Hold the lease until well past the expiry first written.
		eventually(t, "the first expiry to pass", func() bool {
			return time.Now().After(first.ExpiresAt.Add(lk.RenewInterval))
		})
		require.NoError(t, lease.Check(), "held past its first TTL")
		require.NoError(t, lease.Context().Err())
		now := time.Now()
		stored, err := Read(ctx, s, testKey)
		require.NoError(t, err)
		require.Equal(t, first.Token, stored.Token, "same holding")
		require.Equal(t, first.Generation, stored.Generation, "no takeover")
		require.Equal(t, first.AcquiredAt, stored.AcquiredAt)
		require.True(t, stored.ExpiresAt.After(now),
			"stored expiry advanced past now: first %v, stored %v, now %v", first.ExpiresAt, stored.ExpiresAt, now)
		require.True(t, stored.RenewedAt.After(first.RenewedAt))

		_, err = longLocker(s).Acquire(ctx, testKey)
		require.ErrorIs(t, err, ErrLocked, "a renewed lease is not up for takeover")
		require.NoError(t, lease.Release(ctx))
	})
}

func TestLostLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tamper  func(t *testing.T, s objstore.Store)
		remains bool // the tampered object survives our release
	}{
		{"overwritten", func(t *testing.T, s objstore.Store) {
			other := expiredInfo(5)
			other.ExpiresAt = time.Now().Add(time.Hour)
			writeLease(t, s, testKey, other)
		}, true},
		{"deleted", func(t *testing.T, s objstore.Store) {
			require.NoError(t, s.Delete(t.Context(), testKey))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, s objstore.Store) {
				ctx := t.Context()
				lease, err := shortLocker(s).Acquire(ctx, testKey)
				require.NoError(t, err)
				tt.tamper(t, s)

				waitDone(t, lease.Context(), "lease context to be cancelled")
				require.ErrorIs(t, lease.Check(), ErrLost)
				require.ErrorIs(t, context.Cause(lease.Context()), ErrLost)

				err = lease.Release(ctx)
				require.ErrorIs(t, err, ErrLost, "release of a lost lease")
				_, err = Read(ctx, s, testKey)
				if tt.remains {
					require.NoError(t, err, "release must not delete someone else's lease")
				} else {
					require.ErrorIs(t, err, objstore.ErrNotFound)
				}
			})
		})
	}
}

func TestExpiredLeaseTakeoverRace(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		old := expiredInfo(41)
		writeLease(t, s, testKey, old)

		const racers = 8
		start := make(chan struct{})
		var attempts sync.WaitGroup
		results := make([]*Lease, racers)
		errs := make([]error, racers)
		for i := range racers {
			attempts.Go(func() {
				<-start
				results[i], errs[i] = longLocker(s).Acquire(ctx, testKey)
			})
		}
		close(start)
		attempts.Wait()

		var winners []*Lease
		for i, err := range errs {
			if err == nil {
				winners = append(winners, results[i])
				continue
			}
			require.ErrorIs(t, err, ErrLocked, "racer %d", i)
		}
		require.Len(t, winners, 1, "exactly one racer takes over")
		win := winners[0].Info()
		require.Equal(t, old.Generation+1, win.Generation, "generation bumped by one")
		stored, err := Read(ctx, s, testKey)
		require.NoError(t, err)
		require.Equal(t, win, stored)
		for i, err := range errs {
			var le *LockedError
			if errors.As(err, &le) {
				require.Equal(t, win.Token, le.Holder.Token, "racer %d sees the winner as holder", i)
			}
		}
		require.NoError(t, winners[0].Release(ctx))
	})
}

func TestTakeoverWithClock(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		first, err := longLocker(s).Acquire(ctx, testKey)
		require.NoError(t, err)
		// A rival whose clock is past the expiry may take over; the old
		// holder's next renewal then loses the race.
		rival := longLocker(s)
		rival.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
		second, err := rival.Acquire(ctx, testKey)
		require.NoError(t, err)
		require.Equal(t, int64(2), second.Info().Generation)
		require.ErrorIs(t, first.Release(ctx), ErrLost)
		require.NoError(t, second.Release(ctx))
	})
}

func TestReleaseAfterCancel(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx, cancel := context.WithCancel(t.Context())
		lease, err := shortLocker(s).Acquire(ctx, testKey)
		require.NoError(t, err)
		cancel()
		waitDone(t, lease.Context(), "lease context to follow the caller's")
		require.NoError(t, lease.Release(ctx), "release on a cancelled context")
		_, err = Read(t.Context(), s, testKey)
		require.ErrorIs(t, err, objstore.ErrNotFound, "lease deleted")
	})
}

func TestUnreadableLeaseFailsClosed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := t.Context()
		_, err := s.Put(ctx, testKey, []byte("garbage"))
		require.NoError(t, err)
		lease, err := longLocker(s).Acquire(ctx, testKey)
		require.Nil(t, lease)
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrLocked)
		require.Contains(t, err.Error(), testKey)
		require.Contains(t, err.Error(), "delete it")
		body, _, err := s.Get(ctx, testKey)
		require.NoError(t, err)
		require.Equal(t, "garbage", string(body), "left alone")

		_, err = Read(ctx, s, testKey)
		require.ErrorContains(t, err, "parse lease")
	})
}

func TestReadMissing(t *testing.T) {
	t.Parallel()
	_, err := Read(t.Context(), objstore.NewMemory(), testKey)
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

func TestLockerConfig(t *testing.T) {
	t.Parallel()
	s := objstore.NewMemory()
	tests := []struct {
		name    string
		lk      Locker
		wantErr string
	}{
		{"nil store", Locker{}, "Store is nil"},
		{"renew too slow", Locker{Store: s, TTL: time.Second, RenewInterval: 950 * time.Millisecond}, "RenewInterval"},
		{"negative", Locker{Store: s, TTL: -time.Second}, "negative duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lk.Acquire(t.Context(), testKey)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	c, err := (&Locker{Store: s}).config()
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, c.ttl)
	require.Equal(t, 40*time.Second, c.renewInterval)
	require.Equal(t, 12*time.Second, c.driftMargin)
	require.Regexp(t, `^.+/\d+/[0-9a-f]{8}$`, c.owner)
}
