package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

func TestInflightLimit(t *testing.T) {
	var pushbacks, none atomic.Uint64
	for _, tc := range []struct {
		name           string
		start, ceiling int
		pushbacks      func() uint64
		steps          []string // "ok", "fail", "push" (a pushback, then ok)
		want           []int    // limit after each step
	}{
		{"grows by one per answered batch up to the ceiling", 2, 5, none.Load, []string{"ok", "ok", "ok", "ok"}, []int{3, 4, 5, 5}},
		{"a failed batch does not grow it", 2, 5, none.Load, []string{"fail", "ok"}, []int{2, 3}},
		{"a pushback halves it, never below one", 8, 16, pushbacks.Load, []string{"push", "push", "push", "push", "ok"}, []int{4, 2, 1, 1, 2}},
		{"a ceiling below the start keeps it fixed", 4, 1, none.Load, []string{"ok", "ok"}, []int{4, 4}},
		{"a store that cannot push back stays at the start", 2, 5, nil, []string{"ok", "ok"}, []int{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newInflight(tc.start, tc.ceiling, tc.pushbacks)
			for i, s := range tc.steps {
				require.NoError(t, f.acquire(t.Context()))
				if s == "push" {
					pushbacks.Add(1)
				}
				f.release(s != "fail")
				require.Equal(t, tc.want[i], f.current(), "limit after step %d (%s)", i, s)
			}
		})
	}
}

func TestInflightWaitsForASlot(t *testing.T) {
	f := newInflight(1, 1, nil)
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
