package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

const (
	defaultTTL = 2 * time.Minute
	// acquireAttempts bounds how often Acquire starts over when the lease
	// vanishes between seeing it and taking it over.
	acquireAttempts = 4
	// cleanupTimeout bounds release and other clean-up writes that run on a
	// context detached from a cancelled caller.
	cleanupTimeout = 10 * time.Second
)

// Log attribute keys.
const (
	logKey        = "key"
	logOwner      = "owner"
	logGeneration = "generation"
)

// Locker acquires leases in Store. The zero values of the timing fields mean
// their defaults; tests set them to milliseconds.
type Locker struct {
	Store objstore.Store
	// Owner is written into the lease for operators; "" means
	// "<host>/<pid>/<random>".
	Owner string
	// TTL is how long a lease lasts without renewal; default 2m.
	TTL time.Duration
	// RenewInterval is the time between renewals; default TTL/3.
	RenewInterval time.Duration
	// DriftMargin is how long before the written expiry the holder already
	// treats the lease as lost, to absorb clock drift between machines and
	// slow requests; default TTL/10.
	DriftMargin time.Duration
	// Now is the wall clock; default time.Now.
	Now func() time.Time
	// Logger receives lifecycle events; nil means slog.Default().
	Logger *slog.Logger
}

// config is a Locker with defaults filled in, so a Lease never sees zeros.
type config struct {
	store         objstore.Store
	owner         string
	ttl           time.Duration
	renewInterval time.Duration
	driftMargin   time.Duration
	now           func() time.Time
	log           *slog.Logger
}

func (l *Locker) config() (config, error) {
	c := config{
		store: l.Store, owner: l.Owner, ttl: l.TTL, renewInterval: l.RenewInterval,
		driftMargin: l.DriftMargin, now: l.Now, log: l.Logger,
	}
	if c.store == nil {
		return c, errors.New("lock config: Store is nil")
	}
	if c.ttl == 0 {
		c.ttl = defaultTTL
	}
	if c.renewInterval == 0 {
		c.renewInterval = c.ttl / 3
	}
	if c.driftMargin == 0 {
		c.driftMargin = c.ttl / 10
	}
	if c.ttl < 0 || c.renewInterval < 0 || c.driftMargin < 0 {
		return c, fmt.Errorf("lock config: negative duration (TTL %v, RenewInterval %v, DriftMargin %v)", c.ttl, c.renewInterval, c.driftMargin)
	}
	// A renewal must have a chance to land before the holder's own deadline.
	if c.renewInterval >= c.ttl-c.driftMargin {
		return c, fmt.Errorf("lock config: RenewInterval %v must be shorter than TTL %v minus DriftMargin %v", c.renewInterval, c.ttl, c.driftMargin)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With(slog.String("component", "lock"))
	if c.owner == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "unknown-host"
		}
		suffix, err := randomHex(4)
		if err != nil {
			return c, err
		}
		c.owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), suffix)
	}
	return c, nil
}

// wallNow drops the monotonic reading so comparisons use the wall clock: the
// monotonic clock stops while a machine sleeps, but other machines' clocks,
// and the expiry we wrote, do not.
func (c *config) wallNow() time.Time {
	return c.now().Round(0)
}

// newInfo builds the lease a fresh holding writes at now.
func (c *config) newInfo(now time.Time, generation int64) (Info, error) {
	token, err := randomHex(16)
	if err != nil {
		return Info{}, err
	}
	at := time.UnixMilli(now.UnixMilli())
	return Info{
		Owner: c.owner, Token: token, Generation: generation,
		AcquiredAt: at, RenewedAt: at, ExpiresAt: at.Add(c.ttl),
	}, nil
}

// Acquire takes the lease at key or returns a *LockedError naming the current
// holder. The returned Lease renews itself until Release or loss; always call
// Release. Its Context derives from ctx.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lease, error) {
	c, err := l.config()
	if err != nil {
		return nil, err
	}
	for range acquireAttempts {
		lease, err := c.tryAcquire(ctx, key)
		if !errors.Is(err, errRetry) {
			return lease, err
		}
	}
	return nil, fmt.Errorf("acquire lock %q: lease kept vanishing and reappearing after %d attempts", key, acquireAttempts)
}

// errRetry tells Acquire the lease vanished mid-attempt: start over.
var errRetry = errors.New("retry acquire")

// tryAcquire makes one attempt: create the lease, or take over an expired one.
func (c *config) tryAcquire(ctx context.Context, key string) (*Lease, error) {
	info, err := c.newInfo(c.wallNow(), 1)
	if err != nil {
		return nil, err
	}
	body, err := encode(info)
	if err != nil {
		return nil, err
	}
	obj, err := c.store.PutIfAbsent(ctx, key, body)
	switch {
	case err == nil:
		return c.start(ctx, key, info, obj.ETag, "acquired"), nil
	case !errors.Is(err, objstore.ErrPrecondition):
		return c.landed(ctx, key, info.Token, fmt.Errorf("create lock %q: %w", key, err))
	}

	data, cur, err := c.store.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, errRetry
	}
	if err != nil {
		return nil, fmt.Errorf("read lock %q: %w", key, err)
	}
	holder, err := Parse(data)
	if err != nil {
		return nil, corruptError(key, err)
	}
	now := c.wallNow()
	if !holder.Expired(now) {
		return nil, &LockedError{Key: key, Holder: holder}
	}

	if info, err = c.newInfo(now, holder.Generation+1); err != nil {
		return nil, err
	}
	if body, err = encode(info); err != nil {
		return nil, err
	}
	obj, err = c.store.PutIfMatch(ctx, key, body, cur.ETag)
	switch {
	case err == nil:
		c.log.Info("took over expired lease", logKey, key, logOwner, c.owner, logGeneration, info.Generation,
			"previous_owner", holder.Owner, "expired_at", holder.ExpiresAt)
		return c.start(ctx, key, info, obj.ETag, "acquired by takeover"), nil
	case errors.Is(err, objstore.ErrNotFound):
		return nil, errRetry
	case errors.Is(err, objstore.ErrPrecondition):
		return nil, c.lostTakeover(ctx, key, holder)
	default:
		return c.landed(ctx, key, info.Token, fmt.Errorf("take over lock %q: %w", key, err))
	}
}

// lostTakeover reports the rival that beat us to an expired lease, naming the
// new holder when it can be read.
func (c *config) lostTakeover(ctx context.Context, key string, old Info) error {
	data, _, err := c.store.Get(ctx, key)
	if err == nil {
		if holder, perr := Parse(data); perr == nil {
			return &LockedError{Key: key, Holder: holder}
		}
	}
	return &LockedError{Key: key, Holder: old}
}

// landed resolves an ambiguous create or takeover: a write that timed out may
// still have been applied, so re-read and compare the token. If the lease is
// ours we hold it; if the caller has given up meanwhile, give it back.
func (c *config) landed(ctx context.Context, key, token string, writeErr error) (*Lease, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	data, obj, err := c.store.Get(rctx, key)
	if err != nil {
		return nil, writeErr
	}
	info, err := Parse(data)
	if err != nil || info.Token != token {
		return nil, writeErr
	}
	if ctx.Err() != nil {
		if err := c.store.DeleteIfMatch(rctx, key, obj.ETag); err != nil {
			c.log.Warn("could not give back lease after cancelled acquire", logKey, key, logOwner, c.owner, "error", err)
		}
		return nil, writeErr
	}
	c.log.Info("ambiguous write landed", logKey, key, logOwner, c.owner, "error", writeErr)
	return c.start(ctx, key, info, obj.ETag, "acquired after ambiguous write"), nil
}
