package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxElapsed = 2 * time.Minute
	// DefaultMisconfiguredMaxElapsed bounds the retries of a transient
	// failure the backend also calls a misconfiguration (an endpoint that
	// refuses connections or does not resolve): long enough to ride out a
	// server's quick restart, short enough that every command run against
	// a wrong or stopped endpoint says so within 5 seconds, not after two
	// minutes (a pass that cannot reach a root stops there: it is not
	// retried once per request).
	DefaultMisconfiguredMaxElapsed = 3 * time.Second
	DefaultInitialBackoff          = 100 * time.Millisecond
	DefaultMaxBackoff              = 10 * time.Second
)

// Options tune the retry wrapper. Zero durations mean their defaults; tests
// set them (and Sleep, Now) to run without real waiting.
type Options struct {
	// MaxElapsed caps how long one operation keeps retrying, counted from
	// its first failure; default 2m. The last wait is shortened to fit.
	MaxElapsed time.Duration
	// MisconfiguredMaxElapsed replaces MaxElapsed (when shorter) while the
	// failure is also objstore.ErrMisconfigured; default 3s.
	MisconfiguredMaxElapsed time.Duration
	// InitialBackoff is the cap of the first wait; default 100ms. The cap
	// doubles per failed attempt up to MaxBackoff, and each wait is drawn
	// uniformly from [0, cap) ("full jitter").
	InitialBackoff time.Duration
	// MaxBackoff caps a single wait; default 10s.
	MaxBackoff time.Duration
	// IsTransient classifies errors; required. Pass s3.IsTransient for S3
	// and NeverTransient for the local backend. ErrNotFound, ErrPrecondition,
	// ErrInvalidKey and cancellation are permanent whatever it says.
	IsTransient func(error) bool
	// IsThrottle picks, among transient failures, the store pushing back
	// (s3.IsThrottle); only those slow the Pacer. Nil means every transient
	// failure does.
	IsThrottle func(error) bool
	// Pacer, if set, is waited on before every attempt and every further
	// listing page, told Throttled on every throttle (IsThrottle) and
	// Succeeded on every success; share one per pass. Unpaced keys neither
	// wait on it nor feed it.
	Pacer *Pacer
	// Unpaced picks the keys whose requests bypass the Pacer: lease locks.
	// A renewal queued behind a throttled purge could miss its deadline,
	// the lease would be lost and the purge under it cancelled, so slowing
	// down would turn into stopping; lease requests are a handful per
	// minute, so letting them through does not defeat the pacer. The owner
	// of the key layout supplies it (lifecycle.IsLockKey); nil paces every
	// key.
	Unpaced func(key string) bool
	// OnRetry, if set, is called before each wait with the request's
	// context (log with it: it names the table and the pass, see
	// internal/logctx), the operation name, the number of the attempt that
	// failed (1-based), its error and the wait.
	OnRetry func(ctx context.Context, op, key string, attempt int, err error, wait time.Duration)
	// Sleep waits for d or until ctx is done; default a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock MaxElapsed is measured on; default time.Now.
	Now func() time.Time
	// Rand returns a uniform value in [0, n) for n > 0; default math/rand/v2.
	Rand func(n int64) int64
}

// NeverTransient is the classifier for backends with no transient failures
// (the local filesystem): every error is final.
func NeverTransient(error) bool { return false }

func (o Options) withDefaults() Options {
	if o.IsTransient == nil {
		panic("retry: Options.IsTransient is required")
	}
	if o.MaxElapsed <= 0 {
		o.MaxElapsed = DefaultMaxElapsed
	}
	if o.MisconfiguredMaxElapsed <= 0 {
		o.MisconfiguredMaxElapsed = DefaultMisconfiguredMaxElapsed
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.IsThrottle == nil {
		o.IsThrottle = func(error) bool { return true }
	}
	if o.Sleep == nil {
		o.Sleep = SleepContext
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Int64N
	}
	return o
}

// SleepContext waits for d or until ctx is done, returning ctx.Err() then.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff returns the wait after the given failed attempt (1-based): full
// jitter over an exponentially growing cap.
func (o Options) backoff(attempt int) time.Duration {
	ceiling := o.InitialBackoff
	for i := 1; i < attempt && ceiling < o.MaxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, o.MaxBackoff)
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(o.Rand(int64(ceiling)))
}
