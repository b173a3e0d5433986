package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store {
		return Wrap(memstore.New(), Options{IsTransient: s3.IsTransient, Pacer: NewPacer(0)})
	})
}

// TestConformanceThroughFaults runs the suite with every operation failing
// transiently on its first call: the retries must hide it completely.
// DeleteIfMatch is the exception: after a transient failure the wrapper
// takes a missing key as its own delete having landed (conditional.go), so
// the suite's "missing key gives ErrNotFound" clause cannot hold under
// faults; TestDeleteIfMatchLanded covers that path.
func TestConformanceThroughFaults(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store {
		m := memstore.New()
		m.PageSize = 3
		clk := newFakeTime()
		return Wrap(steadyDeleteIfMatch{newFlaky(m, 1)}, testOptions(clk))
	}, objstoretest.WithPageSize(3))
}

// steadyDeleteIfMatch injects no faults into DeleteIfMatch.
type steadyDeleteIfMatch struct{ *flaky }

func (s steadyDeleteIfMatch) DeleteIfMatch(ctx context.Context, key, etag string) error {
	return s.Store.DeleteIfMatch(ctx, key, etag)
}

func TestUnwrap(t *testing.T) {
	m := memstore.New()
	s := Wrap(m, Options{IsTransient: NeverTransient})
	require.Same(t, m, s.(interface{ Unwrap() objstore.Store }).Unwrap())
	require.Equal(t, m.URI(), s.URI())
}

func TestRequiresClassifier(t *testing.T) {
	require.Panics(t, func() { Wrap(memstore.New(), Options{}) })
}

func TestRetriesThenSucceeds(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 2)
	opts := testOptions(clk)
	type retried struct {
		op, key string
		attempt int
		wait    time.Duration
	}
	var got []retried
	opts.OnRetry = func(_ context.Context, op, key string, attempt int, err error, wait time.Duration) {
		require.ErrorIs(t, err, errTransient)
		got = append(got, retried{op, key, attempt, wait})
	}
	s := Wrap(f, opts)

	_, err := s.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, 3, f.count("put"), "put calls: got/want")
	want := []retried{{"put", "k", 1, 100*time.Millisecond - 1}, {"put", "k", 2, 200*time.Millisecond - 1}}
	require.Equal(t, want, got, "retries: got/want")
	require.Equal(t, []time.Duration{want[0].wait, want[1].wait}, clk.Waits(), "waits: got/want")
}

func TestBackoffFullJitterCapped(t *testing.T) {
	var caps []int64
	o := Options{IsTransient: NeverTransient, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Rand: func(n int64) int64 { caps = append(caps, n); return 0 }}.withDefaults()
	for attempt := 1; attempt <= 70; attempt++ {
		require.Zero(t, o.backoff(attempt))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second}
	for i, w := range want {
		require.Equal(t, int64(w), caps[i], "cap after attempt %d: got/want", i+1)
	}
	for i := len(want); i < len(caps); i++ {
		require.Equal(t, int64(time.Second), caps[i], "cap after attempt %d: got/want", i+1)
	}
}

func TestPermanentNotRetried(t *testing.T) {
	for _, perm := range []error{errPermanent, objstore.ErrNotFound, objstore.ErrPrecondition,
		fmt.Errorf("%w: %w", objstore.ErrPrecondition, errTransient)} {
		t.Run(perm.Error(), func(t *testing.T) {
			clk := newFakeTime()
			f := newFlaky(memstore.New(), 5)
			f.err = perm
			s := Wrap(f, testOptions(clk))
			_, err := s.Head(t.Context(), "k")
			require.ErrorIs(t, err, perm)
			require.Equal(t, 1, f.count("head"), "head calls: got/want")
			require.Empty(t, clk.Waits(), "waits")
		})
	}
}

func TestCancelledContextStops(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 5)
	s := Wrap(f, testOptions(clk))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Head(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, f.count("head"), "no attempt on a cancelled context")

	// Cancelled during the wait after a failure: no further attempt.
	ctx, cancel = context.WithCancel(t.Context())
	opts := testOptions(clk)
	opts.OnRetry = func(context.Context, string, string, int, error, time.Duration) { cancel() }
	s = Wrap(f, opts)
	_, err = s.Head(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errTransient, "the last failure stays in the chain")
	require.Equal(t, 1, f.count("head"), "head calls: got/want")
}

func TestMaxElapsed(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 1000)
	opts := testOptions(clk)
	opts.MaxElapsed = time.Second
	s := Wrap(f, opts)

	_, _, err := s.Get(t.Context(), "k", 1<<20)
	require.ErrorIs(t, err, errTransient)
	require.ErrorContains(t, err, "gave up after")
	var total time.Duration
	for _, w := range clk.Waits() {
		require.LessOrEqual(t, w, opts.MaxBackoff, "single wait")
		total += w
	}
	require.Equal(t, time.Second, total, "total wait: got/want the cap (last wait shortened)")
	require.Equal(t, len(clk.Waits())+1, f.count("get"), "attempts: one more than waits")
}

func TestMaxElapsedCountsRequestTime(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 1000)
	opts := testOptions(clk)
	opts.MaxElapsed = time.Second
	// Each failing request takes 600ms. The budget starts at the first
	// failure (t=0.6s): waits of 100ms and 200ms and two more failing
	// requests spend it.
	opts.IsTransient = func(err error) bool { clk.Advance(600 * time.Millisecond); return isTestTransient(err) }
	s := Wrap(f, opts)
	_, _, err := s.Get(t.Context(), "k", 1<<20)
	require.ErrorIs(t, err, errTransient)
	require.Equal(t, 3, f.count("get"), "attempts: got/want")
}

// A first attempt that ran longer than the whole budget (a walk of many
// pages, or one queued behind the pacer) and then failed is still retried.
func TestMaxElapsedRunsFromTheFirstFailure(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 1)
	opts := testOptions(clk)
	opts.MaxElapsed = time.Second
	first := true
	opts.IsTransient = func(err error) bool {
		if first {
			first = false
			clk.Advance(10 * time.Second)
		}
		return isTestTransient(err)
	}
	_, err := Wrap(f, opts).Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, 2, f.count("put"))
}

func TestErrorsAfterRetriesKeepSentinels(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 1)
	s := Wrap(f, testOptions(clk))
	_, _, err := s.Get(t.Context(), "missing", 1<<20)
	require.ErrorIs(t, err, objstore.ErrNotFound)
	require.Equal(t, 2, f.count("get"))
}

func TestCallbackErrorNeverRetried(t *testing.T) {
	m := memstore.New()
	_, err := m.Put(t.Context(), "a", nil)
	require.NoError(t, err)
	clk := newFakeTime()
	f := newFlaky(m, 0)
	s := Wrap(f, testOptions(clk))
	calls := 0
	err = s.List(t.Context(), "", func(objstore.Page) error {
		calls++
		return errTransient // looks transient, but it is the caller's
	})
	require.Equal(t, errTransient, err, "callback error unchanged")
	require.Equal(t, 1, calls)
	require.Equal(t, 1, f.count("list"))
	err = s.Walk(t.Context(), "", func([]objstore.Object) error { return errTransient })
	require.Equal(t, errTransient, err, "callback error unchanged")
	require.Equal(t, 1, f.count("walk"))
}

func TestDeleteOps(t *testing.T) {
	clk := newFakeTime()
	m := memstore.New()
	f := newFlaky(m, 1)
	s := Wrap(f, testOptions(clk))
	_, err := m.Put(t.Context(), "a", nil)
	require.NoError(t, err)
	require.NoError(t, s.Delete(t.Context(), "a"))
	require.Equal(t, 2, f.count("delete"))
	_, err = m.Head(t.Context(), "a")
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

// A transient failure that is also a misconfiguration (an endpoint that
// refuses connections, or never answers them) is retried for
// MisconfiguredMaxElapsed, counted from the start of a connect that timed
// out, not the
// whole MaxElapsed: a first run against a wrong endpoint hears about it in
// seconds. Other transient failures keep the long budget.
func TestMisconfiguredGivesUpSooner(t *testing.T) {
	refused := &objstore.MisconfiguredError{Problem: "cannot reach the endpoint http://127.0.0.1:1: connection refused", Fix: "check aws_endpoint", Err: errTransient}
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"misconfigured", refused, DefaultMisconfiguredMaxElapsed},
		{"plain transient", errTransient, 0}, // 0: the whole MaxElapsed
		// A connect nothing answered for 2 s had been failing for those
		// 2 s: 1 s of the budget is left to retry it.
		{"connect unanswered", &objstore.MisconfiguredError{Problem: "cannot reach the endpoint http://192.0.2.1: no answer", Fix: "check aws_endpoint",
			Err: &objstore.DialTimeoutError{Addr: "192.0.2.1:80", Limit: 2 * time.Second, Err: errTransient}}, DefaultMisconfiguredMaxElapsed - 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeTime()
			f := newFlaky(memstore.New(), 1_000_000)
			f.err = tc.err
			opts := testOptions(clk)
			require.Greater(t, opts.MaxElapsed, 10*time.Second)
			want := cmp.Or(tc.want, opts.MaxElapsed)
			s := Wrap(f, opts)
			_, err := s.Head(t.Context(), "k")
			require.ErrorIs(t, err, tc.err)
			var total time.Duration
			for _, w := range clk.Waits() {
				total += w
			}
			require.Equal(t, want, total, "time spent retrying: got/want")
		})
	}
}

// Pushbacks counts the answers classified as the store pushing back, and a
// caller finds the counter through the wrappers above the retry layer.
func TestPushbacksCounted(t *testing.T) {
	clk := newFakeTime()
	f := newFlaky(memstore.New(), 3)
	opts := testOptions(clk)
	opts.IsThrottle = func(err error) bool { return errors.Is(err, errTransient) }
	s := Wrap(f, opts)
	_, err := s.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, uint64(3), s.(*Store).Pushbacks())
	outer := objstoretest.NewClockStore(s) // any wrapper with Unwrap
	count := objstore.PushbacksOf(outer)
	require.NotNil(t, count)
	require.Equal(t, uint64(3), count())
	require.Nil(t, objstore.PushbacksOf(memstore.New()), "a store that cannot push back has no counter")
}
