package scheduler_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/clocktest"
	"github.com/lance-reaper/reaper/internal/scheduler"
)

// harness runs a scheduler on a fake clock; each pass reports its start
// time on started and returns when the test sends on release (or at once
// when release is nil).
type harness struct {
	t       *testing.T
	clk     *clocktest.Fake
	s       *scheduler.Scheduler
	started chan time.Time
	release chan error
	passes  chan scheduler.PassResult
	skips   atomic.Int32
	cancel  context.CancelFunc
	done    chan error
}

var t0 = time.Date(2026, 3, 2, 10, 7, 0, 0, time.Local)

func newHarness(t *testing.T, cfg scheduler.Scheduler, blocking bool) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     clocktest.NewFake(t0),
		started: make(chan time.Time, 16),
		passes:  make(chan scheduler.PassResult, 16),
		done:    make(chan error, 1),
	}
	if blocking {
		h.release = make(chan error)
	}
	cfg.Clock = h.clk
	cfg.Run = func(ctx context.Context) error {
		h.started <- h.clk.Now()
		if h.release == nil {
			return nil
		}
		select {
		case err := <-h.release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cfg.OnSkip = func() { h.skips.Add(1) }
	cfg.OnPass = func(r scheduler.PassResult) { h.passes <- r }
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	h.s = s
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(h.t.Context())
	h.cancel = cancel
	go func() { h.done <- h.s.Loop(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if h.release != nil {
			close(h.release)
		}
		<-h.done
	})
	h.waitIdle()
}

// waitIdle waits until the loop is blocked on its next timer.
func (h *harness) waitIdle() {
	h.t.Helper()
	require.NoError(h.t, h.clk.WaitForTimers(h.t.Context(), 1))
}

// advanceTo moves the clock to at, which must be the next fire time.
func (h *harness) advanceTo(at time.Time) {
	h.t.Helper()
	h.waitIdle()
	h.clk.Advance(at.Sub(h.clk.Now()))
}

func (h *harness) requirePass(want time.Time) {
	h.t.Helper()
	got := <-h.started
	require.Equal(h.t, want, got, "pass start: got/want")
}

func TestEvery(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, false)
	h.start()
	require.Equal(t, t0.Add(10*time.Minute), h.s.NextRun())

	h.clk.Advance(10*time.Minute - time.Second)
	require.Empty(t, h.started, "no pass before the tick")
	h.clk.Advance(time.Second)
	h.requirePass(t0.Add(10 * time.Minute))
	res := <-h.passes
	require.NoError(t, res.Err)
	require.Equal(t, "schedule", res.Reason)
	require.Equal(t, res, h.s.LastRun())

	h.advanceTo(t0.Add(20 * time.Minute))
	h.requirePass(t0.Add(20 * time.Minute))
	<-h.passes
	h.waitIdle()
	require.Equal(t, t0.Add(30*time.Minute), h.s.NextRun())
}

func TestCronSpec(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "*/15 * * * *"}, false)
	h.start()
	for _, at := range []time.Time{
		time.Date(2026, 3, 2, 10, 15, 0, 0, time.Local),
		time.Date(2026, 3, 2, 10, 30, 0, 0, time.Local),
		time.Date(2026, 3, 2, 10, 45, 0, 0, time.Local),
		time.Date(2026, 3, 2, 11, 0, 0, 0, time.Local),
	} {
		h.waitIdle()
		require.Equal(t, at, h.s.NextRun(), "next run: got/want")
		h.advanceTo(at)
		h.requirePass(at)
		<-h.passes
	}
}

func TestJitter(t *testing.T) {
	const jitter = 90 * time.Second
	var asked []int64
	draws := []int64{0, int64(jitter) - 1, int64(30 * time.Second)}
	h := newHarness(t, scheduler.Scheduler{Spec: "@hourly", Jitter: jitter, Rand: func(n int64) int64 {
		asked = append(asked, n)
		d := draws[0]
		draws = draws[1:]
		return d
	}}, false)
	h.start()

	hour := time.Date(2026, 3, 2, 11, 0, 0, 0, time.Local)
	for i, j := range []time.Duration{0, jitter - 1} {
		want := hour.Add(time.Duration(i) * time.Hour).Add(j)
		h.waitIdle()
		require.Equal(t, want, h.s.NextRun(), "next run with jitter %v: got/want", j)
		h.advanceTo(want)
		h.requirePass(want)
		<-h.passes
	}
	h.waitIdle()
	require.Equal(t, hour.Add(2*time.Hour+30*time.Second), h.s.NextRun(),
		"jitter measured from the schedule, not from the last jittered run")
	require.Equal(t, []int64{int64(jitter), int64(jitter), int64(jitter)}, asked, "Rand bound: got/want")
}

func TestOverlappingTickSkipped(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, true)
	h.start()

	h.advanceTo(t0.Add(10 * time.Minute))
	h.requirePass(t0.Add(10 * time.Minute))
	require.True(t, h.s.Running())

	h.advanceTo(t0.Add(20 * time.Minute)) // the pass still blocks
	h.waitIdle()                          // the loop handled the tick and rescheduled
	require.Equal(t, int32(1), h.skips.Load(), "skipped ticks")
	require.Empty(t, h.started, "no second pass while one runs")
	require.False(t, h.s.TriggerNow(), "no trigger while a pass runs")

	h.release <- nil
	require.NoError(t, (<-h.passes).Err)
	require.False(t, h.s.Running())

	h.advanceTo(t0.Add(30 * time.Minute))
	h.requirePass(t0.Add(30 * time.Minute))
	h.release <- errors.New("boom")
	require.EqualError(t, (<-h.passes).Err, "boom", "a failed pass is reported")
	h.advanceTo(t0.Add(40 * time.Minute))
	h.requirePass(t0.Add(40 * time.Minute))
	h.release <- nil
	<-h.passes
}

func TestTriggerNow(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, false)
	require.False(t, h.s.TriggerNow(), "no pass before Loop")
	h.start()
	require.True(t, h.s.TriggerNow())
	h.requirePass(t0)
	res := <-h.passes
	require.Equal(t, "trigger", res.Reason)
	require.Equal(t, t0.Add(10*time.Minute), h.s.NextRun(), "a trigger does not move the schedule")
}

func TestRunOnStart(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m", RunOnStart: true}, false)
	h.start()
	h.requirePass(t0)
	require.Equal(t, "start", (<-h.passes).Reason)
}

func TestStopWhileIdle(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, false)
	h.start()
	h.cancel()
	require.NoError(t, <-h.done)
	h.done <- nil // for cleanup
	require.Zero(t, h.clk.Pending(), "timer stopped")
	require.True(t, h.s.NextRun().IsZero())
	require.False(t, h.s.TriggerNow(), "no pass after Loop returned")
	require.Empty(t, h.started)
}

func TestStopWhileRunningDrains(t *testing.T) {
	passCtx, abort := context.WithCancel(t.Context())
	defer abort()
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m", PassContext: func() context.Context { return passCtx }}, true)
	h.start()
	h.advanceTo(t0.Add(10 * time.Minute))
	h.requirePass(t0.Add(10 * time.Minute))

	h.cancel() // first signal: stop scheduling
	require.NoError(t, h.clk.WaitForNoTimers(t.Context()), "loop stopped its timer")
	h.clk.Advance(time.Hour)
	require.False(t, h.s.TriggerNow(), "no new pass once stopping")
	select {
	case <-h.done:
		t.Fatal("Loop returned while the pass was still running")
	default:
	}
	require.NoError(t, passCtx.Err(), "the pass's context is not cancelled by stopping the loop")

	h.release <- nil // the pass drains
	require.NoError(t, (<-h.passes).Err)
	require.NoError(t, <-h.done)
	h.done <- nil
	require.Empty(t, h.started, "exactly one pass")
	require.Zero(t, h.skips.Load())
}

func TestStopWhileRunningAbort(t *testing.T) {
	passCtx, abort := context.WithCancel(t.Context())
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m", PassContext: func() context.Context { return passCtx }}, true)
	h.start()
	h.advanceTo(t0.Add(10 * time.Minute))
	h.requirePass(t0.Add(10 * time.Minute))
	h.cancel()
	abort() // second signal: cancel the pass
	require.ErrorIs(t, (<-h.passes).Err, context.Canceled)
	require.NoError(t, <-h.done)
	h.done <- nil
}

func TestDefaultPassContextIsLoops(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, true)
	h.start()
	h.advanceTo(t0.Add(10 * time.Minute))
	h.requirePass(t0.Add(10 * time.Minute))
	h.cancel()
	require.ErrorIs(t, (<-h.passes).Err, context.Canceled, "cancelling Loop cancels the pass")
	require.NoError(t, <-h.done)
	h.done <- nil
}

func TestSecondLoopRefused(t *testing.T) {
	h := newHarness(t, scheduler.Scheduler{Spec: "@every 10m"}, false)
	h.start()
	require.ErrorIs(t, h.s.Loop(t.Context()), scheduler.ErrLooping)
}

func TestNewValidates(t *testing.T) {
	run := func(context.Context) error { return nil }
	for _, spec := range []string{"", "* * *", "@every", "@sometimes", "61 * * * *"} {
		_, err := scheduler.New(scheduler.Scheduler{Spec: spec, Run: run})
		require.Error(t, err, "spec %q", spec)
		require.Error(t, scheduler.ValidateSpec(spec), "spec %q", spec)
	}
	for _, spec := range []string{"*/15 * * * *", "@hourly", "@daily", "@every 10m", "CRON_TZ=UTC 0 3 * * *"} {
		_, err := scheduler.New(scheduler.Scheduler{Spec: spec, Run: run})
		require.NoError(t, err, "spec %q", spec)
	}
	_, err := scheduler.New(scheduler.Scheduler{Spec: "@hourly"})
	require.Error(t, err, "Run is required")
	_, err = scheduler.New(scheduler.Scheduler{Spec: "@hourly", Run: run, Jitter: -time.Second})
	require.Error(t, err, "negative jitter")
}
