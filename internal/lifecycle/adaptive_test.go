//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// fakeNow is a clock the test moves.
type fakeNow struct{ t time.Time }

func (c *fakeNow) now() time.Time { return c.t }

// TestInflightLimit drives the limit with a store model: at limit L the
// store answers rate(L) batches a second, so each answered batch moves the
// clock by 1/rate(L). "push" is a batch answered with a pushback, "fail"
// one that failed.
func TestInflightLimit(t *testing.T) {
	linear := func(l int) float64 { return float64(l) }
	flatFrom := func(top float64) func(int) float64 {
		return func(l int) float64 { return min(float64(l), top) }
	}
	// fallsFrom: past top in flight the store slows down (20% at twice top).
	fallsFrom := func(top int) func(int) float64 {
		return func(l int) float64 {
			if l <= top {
				return float64(l)
			}
			return float64(top) * 0.8
		}
	}
	var pushbacks, none atomic.Uint64
	for _, tc := range []struct {
		name           string
		start, ceiling int
		pushbacks      func() uint64
		rate           func(limit int) float64
		steps          []string // each "ok", "fail" or "push", or "ok*N"
		want           []int    // limit after each step
	}{
		{"doubles while throughput doubles, up to the ceiling", 2, 16, none.Load, linear,
			[]string{"ok", "ok", "ok*4", "ok*8", "ok*16"}, []int{2, 4, 8, 16, 16}},
		{"a step that gained within the noise holds there", 4, 32, none.Load, flatFrom(4.3),
			// 4 -> 8 gains 7.5%: 8 stays, and holds.
			[]string{"ok*4", "ok*8", "ok*16"}, []int{8, 8, 8}},
		{"a step that gained more than the noise doubles again", 4, 32, none.Load, flatFrom(4.5),
			// 4 -> 8 gains 12.5%: 16; 8 -> 16 gains nothing: holds.
			[]string{"ok*4", "ok*8", "ok*16", "ok*16"}, []int{8, 16, 16, 16}},
		{"a step that gained nothing holds there", 4, 32, none.Load, flatFrom(4),
			[]string{"ok*4", "ok*8", "ok*16"}, []int{8, 8, 8}},
		{"a step under which throughput fell goes back and holds", 4, 32, none.Load, fallsFrom(4),
			// 4 -> 8 loses 20%: back to 4.
			[]string{"ok*4", "ok*8", "ok*16"}, []int{8, 4, 4}},
		{"a fall within the noise holds", 4, 32, none.Load, func(l int) float64 { return map[bool]float64{true: 4, false: 3.7}[l <= 4] },
			[]string{"ok*4", "ok*8", "ok*16"}, []int{8, 8, 8}},
		{"a step that paid, then one that did not", 2, 32, none.Load, fallsFrom(4),
			// 2 -> 4 doubles the rate; under 8 it falls: back to 4.
			[]string{"ok*2", "ok*4", "ok*8", "ok*8"}, []int{4, 8, 4, 4}},
		{"a failed batch is not counted", 2, 8, none.Load, linear,
			[]string{"fail", "ok", "fail", "ok"}, []int{2, 2, 2, 4}},
		{"a pushback halves it, never below one, and measures again", 8, 16, pushbacks.Load, linear,
			[]string{"push", "push", "push", "push", "ok", "ok*2", "ok*4"}, []int{4, 2, 1, 1, 2, 4, 8}},
		{"a pushback ends a hold", 4, 32, pushbacks.Load, fallsFrom(4),
			[]string{"ok*4", "ok*8", "push", "ok*2", "ok*4", "ok*8"}, []int{8, 4, 2, 4, 8, 4}},
		{"a ceiling below the start keeps it fixed", 4, 1, none.Load, linear, []string{"ok*8"}, []int{4}},
		{"a store that cannot push back stays at the start", 2, 5, nil, linear, []string{"ok*8"}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeNow{t: time.Unix(1000, 0)}
			f := newInflight(tc.start, tc.ceiling, tc.pushbacks, clock.now)
			for i, s := range tc.steps {
				n := 1
				if base, count, ok := strings.Cut(s, "*"); ok {
					_, err := fmt.Sscan(count, &n)
					require.NoError(t, err)
					s = base
				}
				for range n {
					require.NoError(t, f.acquire(t.Context()))
					clock.t = clock.t.Add(time.Duration(float64(time.Second) / tc.rate(f.current())))
					if s == "push" {
						pushbacks.Add(1)
					}
					f.release(s != "fail")
				}
				require.Equal(t, tc.want[i], f.current(), "limit after step %d (%s)", i, tc.steps[i])
			}
		})
	}
}

// TestInflightWindowSkipsOldBatches: a batch sent under the previous limit
// and answered after a step up is not counted in the new limit's window.
// Here it is slow (10 s); counted, it would make the step look like a fall
// and take it back.
func TestInflightWindowSkipsOldBatches(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	var none atomic.Uint64
	f := newInflight(2, 8, none.Load, clock.now)
	ctx := t.Context()
	tick := func(d time.Duration) { clock.t = clock.t.Add(d) }
	require.NoError(t, f.acquire(ctx)) // A
	require.NoError(t, f.acquire(ctx)) // B
	tick(time.Second)
	f.release(true)                    // A
	require.NoError(t, f.acquire(ctx)) // C, sent under limit 2
	tick(time.Second)
	f.release(true) // B: the first window (2 batches in 2 s) ends
	require.Equal(t, 4, f.current())
	tick(10 * time.Second)
	f.release(true) // C, slow, answered under limit 4
	for range 4 {   // the window of limit 4: 4 batches a second
		require.NoError(t, f.acquire(ctx))
		tick(250 * time.Millisecond)
		f.release(true)
	}
	require.Equal(t, 8, f.current(), "the step paid (1 to 4 batches/s); C must not count")
}

func TestInflightWaitsForASlot(t *testing.T) {
	f := newInflight(1, 1, nil, nil)
	require.NoError(t, f.acquire(t.Context()))
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("shutdown")
	cancel(stop)
	require.ErrorIs(t, f.acquire(ctx), stop, "full: waits until the context ends, with its cause")
	got := make(chan error, 1)
	go func() { got <- f.acquire(t.Context()) }()
	f.release(true)
	require.NoError(t, <-got, "a release wakes a waiter")
}

// overlapStore makes delete batches meet: a batch waits (up to a bound
// that fails the test) until another batch is in flight with it, and
// records the most batches in flight at once.
type overlapStore struct {
	objstore.Store
	mu          sync.Mutex
	inflight    int
	most        int
	calls       int
	meet        chan struct{}
	waitFrom    int // batches from this call on wait for company
	pushEvery   bool
	pushbacks   atomic.Uint64
	failNoMatch atomic.Bool
}

func (s *overlapStore) Pushbacks() uint64      { return s.pushbacks.Load() }
func (s *overlapStore) Unwrap() objstore.Store { return s.Store }

func (s *overlapStore) DeleteBatch(ctx context.Context, keys []string) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.inflight++
	s.most = max(s.most, s.inflight)
	if s.inflight >= 2 {
		select {
		case s.meet <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if s.pushEvery {
		s.pushbacks.Add(1)
	}
	if s.waitFrom > 0 && call == s.waitFrom {
		select {
		case <-s.meet:
		case <-time.After(10 * time.Second): // a bound, not a synchronisation
			s.failNoMatch.Store(true)
		}
	}
	return s.Store.DeleteBatch(ctx, keys)
}

// A purge that starts at one batch in flight grows past it while the store
// answers without pushing back, and stays at one while it pushes back.
func TestPurgeConcurrencyAdapts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		push     bool
		waitFrom int
		wantMost int
	}{
		{"grows without pushback", false, 2, 2},
		{"stays at one under pushback", true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &overlapStore{Store: clockMemory(), meet: make(chan struct{}, 1), pushEvery: tc.push, waitFrom: tc.waitFrom}
			c := &clock{}
			ns := newNS(t, s, c)
			ctx := context.Background()
			lanceTable(t, s, "t", 6000)
			_, err := ns.Drop(ctx, "t", time.Hour)
			require.NoError(t, err)
			c.Advance(time.Hour + time.Second)
			res, err := ns.Purge(ctx, "t", PurgeOptions{DeleteConcurrency: 1, MaxDeleteConcurrency: 2})
			require.NoError(t, err)
			require.Equal(t, OutcomePurged, res.Outcome)
			require.False(t, s.failNoMatch.Load(), "the second batch never had company: the limit did not grow")
			require.Equal(t, tc.wantMost, s.most, "most batches in flight at once: got/want")
			require.Greater(t, s.calls, 3, fmt.Sprintf("batches: %d", s.calls))
		})
	}
}
