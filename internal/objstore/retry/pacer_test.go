package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

func fakePacer(rps float64, clk *fakeTime) *Pacer {
	p := NewPacer(rps)
	p.Now, p.Sleep = clk.Now, clk.Sleep
	return p
}

func TestPacerLimits(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(10, clk) // burst 1: one request per 100ms
	for range 3 {
		require.NoError(t, p.Wait(t.Context()))
	}
	require.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, clk.Waits())
}

func TestPacerUnlimited(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(0, clk)
	for range 100 {
		require.NoError(t, p.Wait(t.Context()))
	}
	require.Empty(t, clk.Waits())
	require.Zero(t, p.Rate(), "unlimited")
}

func TestPacerHalvesAndRecovers(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(100, clk)
	p.Floor = 10

	p.Throttled()
	require.Equal(t, 50.0, p.Rate())
	p.Throttled()
	require.Equal(t, 50.0, p.Rate(), "a burst of throttles within the cooldown halves once")
	clk.Advance(time.Second)
	p.Throttled()
	require.Equal(t, 25.0, p.Rate())
	clk.Advance(time.Second)
	p.Throttled()
	require.Equal(t, 12.5, p.Rate())
	clk.Advance(time.Second)
	p.Throttled()
	require.Equal(t, 10.0, p.Rate(), "never below the floor")

	p.Succeeded()
	require.Equal(t, 10.0, p.Rate(), "recovery waits RecoverEvery after a halving")
	want := []float64{20, 30, 40, 50, 60, 70, 80, 90, 100, 100}
	for _, w := range want {
		clk.Advance(time.Second)
		p.Succeeded()
		p.Succeeded() // at most one step per interval
		require.Equal(t, w, p.Rate(), "additive recovery up to the configured rate")
	}
}

func TestPacerThrottledWhileUnlimited(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(0, clk)
	for range 200 { // 200 requests within one second
		require.NoError(t, p.Wait(t.Context()))
	}
	clk.Advance(500 * time.Millisecond)
	p.Throttled()
	require.Equal(t, 100.0, p.Rate(), "half the observed rate")

	for range 3 {
		clk.Advance(time.Second)
		p.Succeeded()
	}
	require.Equal(t, 160.0, p.Rate(), "recovering by a tenth of the observed rate per second")
	for range 2 {
		clk.Advance(time.Second)
		p.Succeeded()
	}
	require.Zero(t, p.Rate(), "back to unlimited")
}

// A pass whose very first request fails measures a ceiling at the floor;
// the pacer must still return to unlimited, not stay pinned at 1 rps (a
// daemon shares its pacer across passes, so it would stay there for good).
func TestPacerThrottledOnFirstRequestRecovers(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(0, clk)
	require.NoError(t, p.Wait(t.Context()))
	p.Throttled()
	require.Equal(t, DefaultPacerFloor, p.Rate(), "half the observed rate, never below the floor")
	p.Succeeded()
	require.Equal(t, DefaultPacerFloor, p.Rate(), "recovery waits RecoverEvery")
	clk.Advance(time.Second)
	p.Succeeded()
	require.Zero(t, p.Rate(), "back to unlimited")
}

func TestPacerWaitCancelled(t *testing.T) {
	p := NewPacer(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, p.Wait(ctx), context.Canceled)

	clk := newFakeTime()
	p = fakePacer(1, clk)
	require.NoError(t, p.Wait(t.Context()))
	p.Sleep = func(context.Context, time.Duration) error { return context.Canceled }
	require.ErrorIs(t, p.Wait(t.Context()), context.Canceled)
	p.Sleep = clk.Sleep
	require.NoError(t, p.Wait(t.Context()))
	require.Equal(t, []time.Duration{time.Second}, clk.Waits(), "the cancelled wait gave its slot back")
}

func TestStoreThrottlesPacer(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(100, clk)
	opts := testOptions(clk)
	opts.Pacer = p
	s := Wrap(newFlaky(memstore.New(), 1), opts)
	_, err := s.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, 50.0, p.Rate(), "a transient failure halves the shared rate")
}

func TestStoreOnlyThrottlesSlowThePacer(t *testing.T) {
	errThrottle := errors.New("503 SlowDown")
	for _, tc := range []struct {
		name string
		err  error
		want float64
	}{
		{"throttle", errThrottle, 50},
		{"other transient failure", errTransient, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeTime()
			p := fakePacer(100, clk)
			opts := testOptions(clk)
			opts.Pacer = p
			opts.IsTransient = func(error) bool { return true }
			opts.IsThrottle = func(err error) bool { return errors.Is(err, errThrottle) }
			f := newFlaky(memstore.New(), 1)
			f.err = tc.err
			_, err := Wrap(f, opts).Put(t.Context(), "k", []byte("v"))
			require.NoError(t, err)
			require.Equal(t, 2, f.count("put"), "retried either way")
			require.Equal(t, tc.want, p.Rate())
		})
	}
}

func TestUnpacedKeysBypassPacer(t *testing.T) {
	clk := newFakeTime()
	p := fakePacer(1, clk)
	opts := testOptions(clk)
	opts.Pacer = p
	opts.Unpaced = func(key string) bool { return strings.HasSuffix(key, ".reaper-lock") }
	s := Wrap(newFlaky(memstore.New(), 0), opts)
	ctx := t.Context()

	_, err := s.Put(ctx, "bulk", []byte("x")) // takes the only token
	require.NoError(t, err)
	require.Empty(t, clk.Waits())

	obj, err := s.PutIfAbsent(ctx, "t.reaper-lock", []byte("lease"))
	require.NoError(t, err)
	obj, err = s.PutIfMatch(ctx, "t.reaper-lock", []byte("renewed"), obj.ETag)
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "t.reaper-lock", 1<<20)
	require.NoError(t, err)
	require.NoError(t, s.DeleteIfMatch(ctx, "t.reaper-lock", obj.ETag))
	require.Empty(t, clk.Waits(), "unpaced (lock) traffic never waits on the pacer")

	_, err = s.Put(ctx, "bulk", []byte("y"))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{time.Second}, clk.Waits(), "bulk traffic waits")
}
