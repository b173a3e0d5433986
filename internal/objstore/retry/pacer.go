package retry

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacer defaults.
const (
	DefaultPacerFloor        = 1.0
	DefaultPacerCooldown     = time.Second
	DefaultPacerRecoverEvery = time.Second
)

// Pacer is an adaptive rate limiter shared by every store of a pass: each
// request waits on it, a throttling answer halves the rate for everyone
// (once per Cooldown, down to Floor), and successes raise it again
// additively (by a tenth of the ceiling per RecoverEvery) until it is back
// at the configured rate, or unlimited again if it started so. Throttled
// while unlimited starts from the request rate observed over the last
// second. Set the exported fields before first use; zero means the default.
type Pacer struct {
	// Floor is the lowest rate in requests per second; default 1.
	Floor float64
	// Cooldown is the least time between two halvings, so a burst of
	// throttled answers to requests sent together counts once; default 1s.
	Cooldown time.Duration
	// RecoverEvery is the least time between two additive increases, and
	// between a halving and the first increase; default 1s.
	RecoverEvery time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done; default a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	lim      *rate.Limiter
	base     float64   // configured rate; 0 = unlimited
	cur      float64   // current rate; 0 = unlimited
	ceiling  float64   // rate recovery climbs back to
	lastDown time.Time // last halving
	lastUp   time.Time // last halving or increase
	winStart time.Time // observed-rate window
	winCount int
	prevRate float64
}

// NewPacer returns a pacer at rps requests per second; 0 (or less) means
// no limit until the store pushes back.
func NewPacer(rps float64) *Pacer {
	p := &Pacer{base: max(rps, 0)}
	p.cur = p.base
	p.ceiling = p.base
	p.lim = rate.NewLimiter(limitOf(p.cur), burstOf(p.cur))
	return p
}

func limitOf(rps float64) rate.Limit {
	if rps == 0 {
		return rate.Inf
	}
	return rate.Limit(rps)
}

// burstOf allows a tenth of a second's worth of requests at once.
func burstOf(rps float64) int { return max(1, int(rps/10)) }

func (p *Pacer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Pacer) floor() float64 {
	if p.Floor > 0 {
		return p.Floor
	}
	return DefaultPacerFloor
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Wait blocks until the next request may go, or ctx is done.
func (p *Pacer) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	now := p.now()
	p.count(now)
	if p.cur == 0 {
		p.mu.Unlock()
		return nil
	}
	r := p.lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = SleepContext
	}
	if err := sleep(ctx, d); err != nil {
		r.CancelAt(p.now())
		return err
	}
	return nil
}

// count tracks requests per one-second window for the observed rate.
func (p *Pacer) count(now time.Time) {
	if el := now.Sub(p.winStart); el >= time.Second {
		p.prevRate = float64(p.winCount) / el.Seconds()
		p.winStart, p.winCount = now, 0
	}
	p.winCount++
}

// observed estimates the current request rate.
func (p *Pacer) observed(now time.Time) float64 {
	el := max(now.Sub(p.winStart), time.Second)
	return max(p.prevRate, float64(p.winCount)/el.Seconds())
}

// Throttled reports a throttling answer (503 SlowDown, 429, 500; see
// s3.IsThrottle): the rate
// halves, at most once per Cooldown, never below Floor.
func (p *Pacer) Throttled() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.cur != 0 && now.Sub(p.lastDown) < orDefault(p.Cooldown, DefaultPacerCooldown) {
		return
	}
	from := p.cur
	if from == 0 {
		from = max(p.observed(now), p.floor())
		p.ceiling = from
	}
	p.set(now, max(from/2, p.floor()))
	p.lastDown, p.lastUp = now, now
}

// Succeeded reports a request the store answered; while throttled, the rate
// climbs by a tenth of its ceiling at most once per RecoverEvery, and once
// it reaches the ceiling it is back at the configured rate (or unlimited).
func (p *Pacer) Succeeded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == p.base {
		return // not throttled
	}
	now := p.now()
	if now.Sub(p.lastUp) < orDefault(p.RecoverEvery, DefaultPacerRecoverEvery) {
		return
	}
	p.lastUp = now
	next := min(p.cur+max(p.ceiling/10, p.floor()), p.ceiling)
	if next >= p.ceiling {
		// Also when a throttle while unlimited measured a ceiling at the
		// floor (the pass's first request failed): the rate must not stay
		// pinned there.
		next = p.base
	}
	p.set(now, next)
}

func (p *Pacer) set(now time.Time, rps float64) {
	p.cur = rps
	p.lim.SetLimitAt(now, limitOf(rps))
	p.lim.SetBurstAt(now, burstOf(rps))
}

// Rate is the current limit in requests per second; 0 means unlimited.
func (p *Pacer) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// paced reports whether requests for key wait on and feed the pacer.
func (s *Store) paced(key string) bool {
	return s.opts.Pacer != nil && (s.opts.Unpaced == nil || !s.opts.Unpaced(key))
}

// pace waits on the pacer unless there is none or key is unpaced.
func (s *Store) pace(ctx context.Context, key string) error {
	if !s.paced(key) {
		return nil
	}
	return s.opts.Pacer.Wait(ctx)
}

func (s *Store) succeeded(key string) {
	if s.paced(key) {
		s.opts.Pacer.Succeeded()
	}
}

func (s *Store) throttled(key string) {
	s.pushbacks.Add(1)
	if s.paced(key) {
		s.opts.Pacer.Throttled()
	}
}

// Pushbacks counts the answers this store classified as the store pushing
// back (Options.IsThrottle), lease keys included: objstore.Pushback, read by
// a purge that adapts its delete concurrency.
func (s *Store) Pushbacks() uint64 { return s.pushbacks.Load() }
