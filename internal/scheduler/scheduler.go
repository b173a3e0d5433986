// Package scheduler runs purge passes on a cron schedule, never two at once.
//
// Loop blocks, scheduling passes until its context is done; each pass runs
// in a goroutine the Loop tracks, and Loop returns only after the pass in
// flight has returned. A pass runs with the context PassContext returns,
// not Loop's, so shutdown has two steps the caller controls:
//
//	passCtx, abort := context.WithCancel(context.Background())
//	loopCtx, stop := context.WithCancel(context.Background())
//	s, err := scheduler.New(scheduler.Scheduler{
//		Spec: cfg.Schedule, Run: purgePass,
//		PassContext: func() context.Context { return passCtx },
//	})
//	go func() {
//		<-sigterm
//		stop() // first signal: no new pass; Loop waits for the current one
//		<-sigterm
//		abort() // second signal: cancel the pass in flight
//	}()
//	err = s.Loop(loopCtx) // returns once the last pass has drained
//
// With PassContext nil a pass runs under Loop's context, so cancelling Loop
// cancels the pass at once.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Log attribute keys.
const (
	logReason   = "reason"
	logNext     = "next"
	logDuration = "duration_seconds"
	logError    = "error"
)

// Scheduler runs Run on Spec. Fill in the exported fields and pass them to
// New; only the *Scheduler New returns is usable. The zero values of the
// optional fields mean their defaults.
type Scheduler struct {
	// Spec is a standard 5-field cron spec ("*/15 * * * *") or a descriptor
	// ("@hourly", "@every 10m"); "CRON_TZ=Zone " may prefix it, otherwise
	// the local time zone applies. Required.
	Spec string
	// Jitter delays each scheduled pass by a random duration in
	// [0, Jitter), so replicas sharing a spec do not hit the store at once.
	Jitter time.Duration
	// Clock is the time source; default RealClock.
	Clock Clock
	// Rand returns a uniform value in [0, n) for n > 0; default math/rand/v2.
	Rand func(n int64) int64
	// Run runs one pass. Required. Its error is logged, not fatal: the next
	// tick runs again.
	Run func(ctx context.Context) error
	// PassContext returns the context for the next pass; nil means passes
	// run under Loop's context. See the package doc for graceful shutdown.
	PassContext func() context.Context
	// RunOnStart runs a pass as soon as Loop starts.
	RunOnStart bool
	// Logger receives scheduling events; nil means slog.Default().
	Logger *slog.Logger
	// OnSkip is called when a tick arrives while a pass still runs.
	OnSkip func()
	// OnPass is called after each pass, with its result, once Running
	// reports false again (for metrics, and for tests to synchronise on).
	OnPass func(PassResult)

	sched cron.Schedule
	log   *slog.Logger
	st    *state
}

// PassResult describes one finished pass.
type PassResult struct {
	Started  time.Time
	Finished time.Time
	// Reason is "schedule", "trigger" or "start".
	Reason string
	Err    error
}

type state struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	looping bool
	loopCtx context.Context
	running bool
	last    PassResult
	next    time.Time
}

// New validates cfg and returns a scheduler ready for Loop.
func New(cfg Scheduler) (*Scheduler, error) {
	if cfg.Run == nil {
		return nil, errors.New("scheduler: Run is required")
	}
	if cfg.Jitter < 0 {
		return nil, fmt.Errorf("scheduler: jitter %v is negative", cfg.Jitter)
	}
	sched, err := cron.ParseStandard(cfg.Spec)
	if err != nil {
		return nil, fmt.Errorf("parse schedule %q: %w", cfg.Spec, err)
	}
	s := cfg
	s.sched = sched
	s.st = &state{}
	if s.Clock == nil {
		s.Clock = RealClock{}
	}
	if s.Rand == nil {
		s.Rand = rand.Int64N
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.log = s.Logger.With(slog.String("component", "scheduler"))
	return &s, nil
}

// ValidateSpec reports whether spec parses, for config validation.
func ValidateSpec(spec string) error {
	if _, err := cron.ParseStandard(spec); err != nil {
		return fmt.Errorf("parse schedule %q: %w", spec, err)
	}
	return nil
}

// ErrLooping is returned by a second concurrent Loop.
var ErrLooping = errors.New("scheduler: loop already running")

// Loop schedules passes until ctx is done, then waits for the pass in
// flight (whose context it does not cancel when PassContext is set) and
// returns nil. A tick that arrives while a pass runs is skipped.
func (s *Scheduler) Loop(ctx context.Context) error {
	st := s.st
	st.mu.Lock()
	if st.looping {
		st.mu.Unlock()
		return ErrLooping
	}
	st.looping, st.loopCtx = true, ctx
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.looping, st.loopCtx, st.next = false, nil, time.Time{}
		st.mu.Unlock()
		st.wg.Wait()
	}()

	if s.RunOnStart {
		s.start("start")
	}
	for {
		now := s.Clock.Now()
		next := s.nextAfter(now)
		st.mu.Lock()
		st.next = next
		st.mu.Unlock()
		s.log.Debug("next pass", logNext, next)
		t := s.Clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			s.log.Info("scheduling stopped")
			return nil
		case <-t.C():
			if !s.start("schedule") {
				s.log.Warn("pass still running, tick skipped", logNext, next)
				if s.OnSkip != nil {
					s.OnSkip()
				}
			}
		}
	}
}

// nextAfter is the next scheduled time after now plus jitter.
func (s *Scheduler) nextAfter(now time.Time) time.Time {
	next := s.sched.Next(now)
	if s.Jitter > 0 {
		next = next.Add(time.Duration(s.Rand(int64(s.Jitter))))
	}
	return next
}

// TriggerNow starts a pass at once unless one is running or Loop is not
// running; it reports whether it started one.
func (s *Scheduler) TriggerNow() bool { return s.start("trigger") }

// start launches a pass unless one runs or the loop has stopped.
func (s *Scheduler) start(reason string) bool {
	st := s.st
	st.mu.Lock()
	if !st.looping || st.running || st.loopCtx.Err() != nil {
		st.mu.Unlock()
		return false
	}
	st.running = true
	loopCtx := st.loopCtx
	st.wg.Add(1) // under mu while looping: Loop's Wait comes after
	st.mu.Unlock()

	go func() {
		defer st.wg.Done()
		ctx := loopCtx
		if s.PassContext != nil {
			ctx = s.PassContext()
		}
		res := PassResult{Started: s.Clock.Now(), Reason: reason}
		s.log.Debug("scheduled pass triggered", logReason, reason)
		res.Err = s.Run(ctx)
		res.Finished = s.Clock.Now()
		s.logResult(res)
		st.mu.Lock()
		st.running, st.last = false, res
		st.mu.Unlock()
		if s.OnPass != nil {
			s.OnPass(res)
		}
	}()
	return true
}

func (s *Scheduler) logResult(res PassResult) {
	// The worker logs "pass started" and "pass finished" with the result;
	// these lines say what the schedule did, in other words.
	d := res.Finished.Sub(res.Started).Seconds()
	switch {
	case res.Err == nil:
		s.log.Debug("scheduled pass done", logReason, res.Reason, logDuration, d)
	case errors.Is(res.Err, context.Canceled):
		s.log.Info("scheduled pass cancelled", logReason, res.Reason, logDuration, d)
	default:
		s.log.Error("scheduled pass failed", logReason, res.Reason, logDuration, d, logError, res.Err)
	}
}

// Running reports whether a pass is in flight.
func (s *Scheduler) Running() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.running
}

// LastRun is the last finished pass; zero before the first.
func (s *Scheduler) LastRun() PassResult {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.last
}

// NextRun is when the next scheduled pass is due (jitter included); zero
// when Loop is not running.
func (s *Scheduler) NextRun() time.Time {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.next
}
