// Package daemon holds what `reaper run` adds around the worker's passes:
// the shutdown state machine (drain, then a grace period, then cancel) and
// the HTTP endpoints with the readiness probe. cmd/reaper wires them.
package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Drain is the daemon's shutdown state machine. Running, passes go on.
// On the first interrupt (drain closed, or ctx cancelled) it drains: the
// schedule stops (LoopContext is cancelled), no new pass or table starts
// (Draining), and the table in flight gets grace to finish; when grace
// elapses, or ctx is cancelled (a second signal), or the passes end,
// PassContext is cancelled. The marker of a table cut short stays, and the
// next pass finishes it.
type Drain struct {
	passCtx  context.Context
	abort    context.CancelFunc
	loopCtx  context.Context
	stopLoop context.CancelFunc
	draining chan struct{}
	once     sync.Once
	done     chan struct{}
}

// DrainOptions configure StartDrain.
type DrainOptions struct {
	// Grace is how long the table in flight may finish after the drain.
	Grace time.Duration
	// After is the grace timer; nil uses time.After. Tests control it.
	After  func(time.Duration) <-chan time.Time
	Logger *slog.Logger
}

// StartDrain watches drain (closed on the first interrupt; nil when the
// context carries none, so only ctx's cancellation stops the daemon) and
// ctx. Call Stop when the daemon returns.
func StartDrain(ctx context.Context, drain <-chan struct{}, o DrainOptions) *Drain {
	after := o.After
	if after == nil {
		after = time.After
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	d := &Drain{draining: make(chan struct{}), done: make(chan struct{})}
	// Passes run on their own context: cancelled after the grace period
	// that follows the first signal, or at once on the second.
	d.passCtx, d.abort = context.WithCancel(context.WithoutCancel(ctx))
	d.loopCtx, d.stopLoop = context.WithCancel(ctx)
	go func() {
		defer close(d.done)
		select {
		case <-drain:
		case <-ctx.Done():
		case <-d.passCtx.Done(): // Stop before any signal
			return
		}
		d.once.Do(func() { close(d.draining) })
		log.Info("shutdown requested: no new pass or table starts", "grace", o.Grace.String())
		d.stopLoop()
		select {
		case <-after(o.Grace):
			log.Warn("shutdown grace elapsed: cancelling the table in flight (its marker stays; the next pass finishes it)")
		case <-ctx.Done():
		case <-d.passCtx.Done():
		}
		d.abort()
	}()
	return d
}

// PassContext is the context passes run on.
func (d *Drain) PassContext() context.Context { return d.passCtx }

// LoopContext is the schedule's context: cancelled when the drain starts.
func (d *Drain) LoopContext() context.Context { return d.loopCtx }

// Draining reports whether shutdown has begun: no new pass or table
// starts.
func (d *Drain) Draining() bool {
	select {
	case <-d.draining:
		return true
	default:
		return false
	}
}

// Stop cancels everything and waits for the state machine to end.
func (d *Drain) Stop() {
	d.abort()
	d.stopLoop()
	<-d.done
}
