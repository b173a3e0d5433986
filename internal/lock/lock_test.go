//go:build !fuzzonly

package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

const testKey = "locks/lifecycle.lock"

func TestAcquireReleaseReacquire(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
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
		require.False(t, stored.Modified.IsZero(), "Read returns the store's LastModified")
		stored.Modified = time.Time{}
		require.Equal(t, info, stored, "stored lease: got/want")
		require.Equal(t, lk.TTL, stored.TTL, "the TTL is written")

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
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
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
		holderInfo := le.Holder
		require.False(t, holderInfo.Modified.IsZero())
		require.Equal(t, holderInfo.TakeoverAt(holderInfo.Modified, 0), le.TakeoverAt)
		holderInfo.Modified = time.Time{}
		require.Equal(t, lease.Info(), holderInfo, "holder info: got/want")
		msg := err.Error()
		require.Contains(t, msg, "holder-host/1/aa")
		require.Contains(t, msg, le.TakeoverAt.UTC().Format(time.RFC3339))
		require.Contains(t, msg, "can be taken over from")
		require.NoError(t, lease.Check(), "the holder is unaffected")
	})
}

func TestRenewalKeepsLeaseAlive(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		// shortLocker's 400ms between renewal deadline and last write is
		// too tight for a race-detector run on a loaded 2-core machine (CI
		// saw a renewal starved past it); this test is about renewals
		// moving the lease, not about how short a lease can be.
		lk := shortLocker(s)
		lk.TTL, lk.RenewInterval, lk.Margin = 2*time.Second, 100*time.Millisecond, 500*time.Millisecond
		lease, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err)
		first := lease.Info()

		// Hold the lease until well past the expiry first written (by the
		// store's clock, which the lease's times are written in).
		eventually(t, "the first expiry to pass", func() bool {
			now, err := s.Now(ctx)
			return err == nil && now.After(first.ExpiresAt.Add(lk.RenewInterval))
		})
		require.NoError(t, lease.Check(), "held past its first TTL")
		require.NoError(t, lease.Context().Err())
		stored, err := Read(ctx, s, testKey)
		require.NoError(t, err)
		require.Equal(t, first.Token, stored.Token, "same holding")
		require.Equal(t, first.Generation, stored.Generation, "no takeover")
		require.Equal(t, first.AcquiredAt, stored.AcquiredAt)
		// The written times are estimates of the store's clock (S3's lag
		// by up to a second): what counts is that renewals moved them and
		// that no rival may take the lease over.
		require.True(t, stored.ExpiresAt.After(first.ExpiresAt),
			"stored expiry advanced: first %v, stored %v", first.ExpiresAt, stored.ExpiresAt)
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
		tamper  func(t *testing.T, s *objstoretest.ClockStore)
		remains bool // the tampered object survives our release
	}{
		{"overwritten", func(t *testing.T, s *objstoretest.ClockStore) {
			writeLease(t, s, testKey, deadInfo(5))
		}, true},
		{"deleted", func(t *testing.T, s *objstoretest.ClockStore) {
			require.NoError(t, s.Delete(t.Context(), testKey))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
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
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		old := deadInfo(41)
		writeLease(t, s, testKey, old)
		expire(s, old.TTL)

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
		stored.Modified = time.Time{}
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

// TestSkewedHostsCannotTakeOver: hosts' clocks take no part in a takeover.
// A rival whose clock runs minutes (or days) ahead, or behind, cannot take
// over a live lease; only the store's clock passing the lease's TTL plus
// the skew allowance lets it, and the frozen holder then finds its lease
// lost before it could send anything.
func TestSkewedHostsCannotTakeOver(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		holderClk := &holderClock{}
		holder := longLocker(s)
		holder.Clock = holderClk.Now
		holder.SkewAllowance = 5 * time.Minute
		first, err := holder.Acquire(ctx, testKey)
		require.NoError(t, err)
		for _, skew := range []time.Duration{80 * time.Second, 5 * time.Minute, 7 * 24 * time.Hour, -7 * 24 * time.Hour} {
			rival := longLocker(s)
			rival.SkewAllowance = 5 * time.Minute
			rival.Clock = func() time.Time { return time.Now().Add(skew) }
			_, err := rival.Acquire(ctx, testKey)
			require.ErrorIs(t, err, ErrLocked, "a rival whose clock is off by %s", skew)
		}
		// The store's clock passes the TTL but not the skew allowance.
		s.Advance(holder.TTL + objstore.TimeResolution + time.Second)
		rival := longLocker(s)
		rival.SkewAllowance = 5 * time.Minute
		_, err = rival.Acquire(ctx, testKey)
		require.ErrorIs(t, err, ErrLocked, "within the skew allowance")
		// The holder was frozen all along: its clock moved with the store's.
		holderClk.Advance(holder.TTL + time.Second)
		s.Advance(5 * time.Minute)
		second, err := rival.Acquire(ctx, testKey)
		require.NoError(t, err, "past TTL + resolution + skew by the store's clock")
		require.Equal(t, int64(2), second.Info().Generation)
		_, ferr := first.Allow()
		require.ErrorIs(t, ferr, ErrLost, "the frozen holder's fence refuses when it resumes")
		require.ErrorIs(t, first.Release(ctx), ErrLost)
		require.NoError(t, second.Release(ctx))
	})
}

// TestVerifyAgainstStore: Verify reads the store, so a lease replaced
// behind the holder's back is lost at once, before the next renewal.
func TestVerifyAgainstStore(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		lease, err := longLocker(s).Acquire(ctx, testKey)
		require.NoError(t, err)
		require.NoError(t, lease.Verify(ctx), "verify a held lease")
		require.NoError(t, lease.Check())
		writeLease(t, s, testKey, deadInfo(9))
		require.NoError(t, lease.Check(), "in memory the lease still looks held")
		require.ErrorIs(t, lease.Verify(ctx), ErrLost, "the store says otherwise")
		require.ErrorIs(t, lease.Check(), ErrLost, "and the loss sticks")
		_, ferr := lease.Allow()
		require.ErrorIs(t, ferr, ErrLost, "the fence refuses")
		require.ErrorIs(t, lease.Release(ctx), ErrLost)
	})
}

// listedLease is the lease object as a listing of its folder returns it.
func listedLease(t *testing.T, s objstore.Store) (objstore.Object, bool) {
	t.Helper()
	var obj objstore.Object
	found := false
	require.NoError(t, s.List(t.Context(), testKey, func(p objstore.Page) error {
		for _, o := range p.Objects {
			if o.Key == testKey {
				obj, found = o, true
			}
		}
		return nil
	}))
	return obj, found
}

// headCounter counts Head and Get calls: the reads Verify makes.
type headCounter struct {
	objstore.Store
	reads atomic.Int64
}

func (h *headCounter) Head(ctx context.Context, key string) (objstore.Object, error) {
	h.reads.Add(1)
	return h.Store.Head(ctx, key)
}

func (h *headCounter) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	h.reads.Add(1)
	return h.Store.Get(ctx, key, limit)
}

// TestVerifyListed: a lease read with other objects (a listing) is
// verified from that read when it carries the holder's ETag, with no read
// of its own; anything else is judged by Verify, so a lease replaced, gone
// or past the store's deadline is lost exactly as there.
func TestVerifyListed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		hc := &headCounter{Store: s}
		lk := longLocker(hc)
		lease, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err)
		obj, found := listedLease(t, s)
		require.True(t, found)
		before := hc.reads.Load()
		require.NoError(t, lease.VerifyListed(ctx, obj, true))
		require.Equal(t, before, hc.reads.Load(), "the listed ETag is the holder's: no read of its own")

		noETag := obj
		noETag.ETag = ""
		require.NoError(t, lease.VerifyListed(ctx, noETag, true), "a listing without ETags: Verify reads it")
		require.Greater(t, hc.reads.Load(), before)

		writeLease(t, s, testKey, deadInfo(9))
		now, found := listedLease(t, s)
		require.True(t, found)
		require.ErrorIs(t, lease.VerifyListed(ctx, now, true), ErrLost, "replaced behind the holder's back")
		require.ErrorIs(t, lease.VerifyListed(ctx, obj, true), ErrLost, "and the loss sticks")
		_ = lease.Release(ctx)
	})
	t.Run("gone", func(t *testing.T) {
		s := objstoretest.NewClockStore(memstore.New())
		lease, err := longLocker(s).Acquire(t.Context(), testKey)
		require.NoError(t, err)
		require.NoError(t, s.Delete(t.Context(), testKey))
		err = lease.VerifyListed(t.Context(), objstore.Object{}, false)
		require.ErrorIs(t, err, ErrLost)
		require.ErrorContains(t, err, "gone from the store")
	})
	t.Run("the store's deadline", func(t *testing.T) {
		s := objstoretest.NewClockStore(memstore.New())
		lk := longLocker(s)
		lk.Clock = func() time.Time { return time.Unix(1000, 0) } // stopped
		lease, err := lk.Acquire(t.Context(), testKey)
		require.NoError(t, err)
		s.Advance(lk.TTL - lk.TTL/10 + 2*objstore.TimeResolution)
		obj, found := listedLease(t, s)
		require.True(t, found)
		err = lease.VerifyListed(t.Context(), obj, true)
		require.ErrorIs(t, err, ErrLost, "the listed version's LastModified dates the deadline")
		require.ErrorContains(t, err, "frozen longer than its own clock shows")
	})
}

// TestVerifyReadsTheStoresClock: a holder whose own clock stopped (a VM
// paused by its hypervisor: CLOCK_BOOTTIME does not count that) while the
// store's ran on loses its lease at its next Verify, before a rival may
// take it over.
func TestVerifyReadsTheStoresClock(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		lk := longLocker(s)
		lk.Clock = func() time.Time { return time.Unix(1000, 0) } // stopped
		lease, err := lk.Acquire(ctx, testKey)
		require.NoError(t, err)
		require.NoError(t, lease.Verify(ctx))
		s.Advance(lk.TTL - lk.TTL/10 + 2*objstore.TimeResolution)
		require.NoError(t, lease.Check(), "its own clock says nothing happened")
		err = lease.Verify(ctx)
		require.ErrorIs(t, err, ErrLost)
		require.ErrorContains(t, err, "frozen longer than its own clock shows")
		_, ferr := lease.Allow()
		require.ErrorIs(t, ferr, ErrLost, "and the fence refuses from then on")
		_, err = longLocker(s).Acquire(ctx, testKey)
		require.ErrorIs(t, err, ErrLocked, "no rival could take it over yet")
		_ = lease.Release(ctx)
	})
}

// TestLeaseFencesItsContext: work under the lease's context is fenced by
// the lease: mutating calls succeed while it is held and fail with
// objstore.ErrFenced, sending nothing, once the holder's clock passes its
// deadline, even before the context is cancelled.
func TestLeaseFencesItsContext(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		clk := &holderClock{}
		lk := longLocker(s)
		lk.Clock = clk.Now
		lease, err := lk.Acquire(t.Context(), "t.reaper-lock")
		require.NoError(t, err)
		wctx := lease.Context()
		_, err = s.Put(wctx, "t.lance/a", []byte("a"))
		require.NoError(t, err, "a write under a held lease")
		limit, err := lease.Allow()
		require.NoError(t, err)
		require.Equal(t, lk.TTL/20, limit, "the fence limits a request to RequestTimeout (Margin/2)")
		clk.Advance(lk.TTL - lk.TTL/10) // exactly the deadline: TTL - Margin
		err = s.Delete(wctx, "t.lance/a")
		require.ErrorIs(t, err, objstore.ErrFenced, "a delete past the holder's deadline")
		require.ErrorIs(t, err, ErrLost)
		_, _, err = s.Get(t.Context(), "t.lance/a", 1<<20)
		require.NoError(t, err, "nothing was deleted")
		_ = lease.Release(t.Context())
	})
}

func TestReleaseAfterCancel(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
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
	forEachBackend(t, func(t *testing.T, s *objstoretest.ClockStore) {
		ctx := t.Context()
		_, err := s.Put(ctx, testKey, []byte("garbage"))
		require.NoError(t, err)
		lease, err := longLocker(s).Acquire(ctx, testKey)
		require.Nil(t, lease)
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrLocked)
		require.Contains(t, err.Error(), testKey)
		require.Contains(t, err.Error(), "delete it")
		body, _, err := s.Get(ctx, testKey, 1<<20)
		require.NoError(t, err)
		require.Equal(t, "garbage", string(body), "left alone")

		_, err = Read(ctx, s, testKey)
		require.ErrorContains(t, err, "parse lease")
	})
}

func TestReadMissing(t *testing.T) {
	t.Parallel()
	_, err := Read(t.Context(), memstore.New(), testKey)
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

func TestLockerConfig(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	tests := []struct {
		name    string
		lk      Locker
		wantErr string
	}{
		{"nil store", Locker{}, "Store is nil"},
		{"renew too slow", Locker{Store: s, TTL: time.Second, RenewInterval: 950 * time.Millisecond}, "RenewInterval"},
		{"negative", Locker{Store: s, TTL: -time.Second}, "negative duration"},
		{"request outlives margin", Locker{Store: s, TTL: time.Minute, Margin: time.Second, RequestTimeout: time.Second}, "shorter than Margin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lk.Acquire(t.Context(), testKey)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	c, err := (&Locker{Store: s}).locker()
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, c.ttl)
	require.Equal(t, 40*time.Second, c.renewInterval)
	require.Equal(t, 12*time.Second, c.margin)
	require.Equal(t, 6*time.Second, c.requestTimeout)
	require.Regexp(t, `^.+/\d+/[0-9a-f]{8}$`, c.owner)
}
