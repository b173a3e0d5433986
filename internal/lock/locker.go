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

// DefaultTTL is a lease's TTL when Locker.TTL is zero; lifecycle, config
// and the CLI read it from here.
const DefaultTTL = 2 * time.Minute

// MinTTL is the shortest lease that holds on a store whose clock reads to
// resolution: a lease's stamps and its takeover time are compared at that
// resolution, so a lease of one tick can look expired at its first renewal.
// Two ticks leave a renewal (at TTL/3) room to land.
func MinTTL(resolution time.Duration) time.Duration { return 2 * resolution }

const (
	// acquireAttempts bounds how often Acquire starts over when the lease
	// vanishes between seeing it and taking it over.
	acquireAttempts = 4
	// cleanupTimeout bounds release and other clean-up writes that run on a
	// context detached from a cancelled caller.
	cleanupTimeout = 10 * time.Second
)

// Log attribute keys. The lease object is "lease", not "key": the table and
// the pass come from the context the lease was acquired with (see
// internal/logctx), so a line names each concept once.
const (
	logLease      = "lease"
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
	// TTL is how long a lease lasts after its last write, by the store's
	// clock; default 2m.
	TTL time.Duration
	// RenewInterval is the time between renewals; default TTL/3.
	RenewInterval time.Duration
	// Margin is how long before its TTL runs out, by its own Clock, the
	// holder stops sending mutating requests; default TTL/10.
	Margin time.Duration
	// RequestTimeout is the longest one mutating request under the lease may
	// take (the fence's limit); default Margin/2. It must be shorter than
	// Margin, so a request sent just before the holder's deadline ends
	// before anyone may take the lease over.
	RequestTimeout time.Duration
	// SkewAllowance is how long after TTL, by the store's clock, a
	// contender still waits before it takes a lease over: room for the
	// store's nodes to disagree and for the holder's clock to run slow.
	SkewAllowance time.Duration
	// Clock is the holder's clock, used only to measure how long ago it
	// sent a lease write; default CLOCK_BOOTTIME (it counts a suspended VM
	// and ignores wall-clock steps). Host wall clocks play no part in the
	// protocol.
	Clock func() time.Time
	// Logger receives lifecycle events; nil means slog.Default().
	Logger *slog.Logger
}

// locker is a Locker with its defaults filled in, so a Lease never sees
// zeros: it acquires, and each Lease keeps a copy to renew and release.
type locker struct {
	store          objstore.Store
	owner          string
	ttl            time.Duration
	renewInterval  time.Duration
	margin         time.Duration
	requestTimeout time.Duration
	skew           time.Duration
	clock          func() time.Time
	log            *slog.Logger
}

func (l *Locker) locker() (locker, error) {
	c := locker{
		store: l.Store, owner: l.Owner, ttl: l.TTL, renewInterval: l.RenewInterval,
		margin: l.Margin, requestTimeout: l.RequestTimeout, skew: l.SkewAllowance, clock: l.Clock, log: l.Logger,
	}
	if c.store == nil {
		return c, errors.New("lock config: Store is nil")
	}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.renewInterval == 0 {
		c.renewInterval = c.ttl / 3
	}
	if c.margin == 0 {
		c.margin = c.ttl / 10
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = c.margin / 2
	}
	if c.ttl < 0 || c.renewInterval < 0 || c.margin < 0 || c.requestTimeout < 0 || c.skew < 0 {
		return c, fmt.Errorf("lock config: negative duration (TTL %v, RenewInterval %v, Margin %v, RequestTimeout %v, SkewAllowance %v)",
			c.ttl, c.renewInterval, c.margin, c.requestTimeout, c.skew)
	}
	// A request sent just before the deadline must end before the lease
	// can be taken over.
	if c.requestTimeout <= 0 || c.requestTimeout >= c.margin {
		return c, fmt.Errorf("lock config: RequestTimeout %v must be positive and shorter than Margin %v", c.requestTimeout, c.margin)
	}
	// A renewal must have a chance to land before the holder's own deadline.
	if c.renewInterval >= c.ttl-c.margin {
		return c, fmt.Errorf("lock config: RenewInterval %v must be shorter than TTL %v minus Margin %v", c.renewInterval, c.ttl, c.margin)
	}
	if c.clock == nil {
		c.clock = bootClock
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

// elapsed reads the holder's clock without its monotonic reading (a
// CLOCK_BOOTTIME reading has none; an injected clock may).
func (c *locker) elapsed() time.Time {
	return c.clock().Round(0)
}

// newInfo builds the lease a fresh holding writes when the store's clock
// reads storeNow.
func (c *locker) newInfo(storeNow time.Time, generation int64) (Info, error) {
	token, err := randomHex(16)
	if err != nil {
		return Info{}, err
	}
	at := time.UnixMilli(storeNow.UnixMilli())
	return Info{
		Owner: c.owner, Token: token, Generation: generation, TTL: c.ttl,
		AcquiredAt: at, RenewedAt: at, ExpiresAt: at.Add(c.ttl),
	}, nil
}

// Acquire takes the lease at key or returns a *LockedError naming the current
// holder. The returned Lease renews itself until Release or loss; always call
// Release. Its Context derives from ctx and carries the lease's fence.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lease, error) {
	c, err := l.locker()
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

// tryAcquire makes one attempt: create the lease, or take over one whose
// TTL and skew allowance have passed by the store's clock.
func (c *locker) tryAcquire(ctx context.Context, key string) (*Lease, error) {
	storeNow, err := c.store.Now(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire lock %q: read the store's clock: %w", key, err)
	}
	info, err := c.newInfo(storeNow, 1)
	if err != nil {
		return nil, err
	}
	body, err := encode(info)
	if err != nil {
		return nil, err
	}
	sent := c.elapsed()
	obj, err := c.store.PutIfAbsent(ctx, key, body)
	switch {
	case err == nil:
		return c.start(ctx, key, info, obj.ETag, sent, "acquired"), nil
	case !errors.Is(err, objstore.ErrPrecondition):
		return c.landed(ctx, key, info.Token, sent, fmt.Errorf("create lock %q: %w", key, err))
	}

	data, cur, err := c.store.Get(ctx, key, MaxLeaseBytes)
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
	holder.Modified = cur.LastModified
	// The store's clock, read after the lease: a lower bound of the time
	// at which the takeover below can land.
	if storeNow, err = c.store.Now(ctx); err != nil {
		return nil, fmt.Errorf("acquire lock %q: read the store's clock: %w", key, err)
	}
	if storeNow.Before(holder.TakeoverAt(cur.LastModified, c.skew)) {
		return nil, &LockedError{Key: key, Holder: holder, TakeoverAt: holder.TakeoverAt(cur.LastModified, c.skew)}
	}

	if info, err = c.newInfo(storeNow, holder.Generation+1); err != nil {
		return nil, err
	}
	if body, err = encode(info); err != nil {
		return nil, err
	}
	sent = c.elapsed()
	obj, err = c.store.PutIfMatch(ctx, key, body, cur.ETag)
	switch {
	case err == nil:
		c.log.InfoContext(ctx, "took over expired lease", logLease, key, logOwner, c.owner, logGeneration, info.Generation,
			"previous_owner", holder.Owner, "last_written", cur.LastModified, "store_now", storeNow)
		return c.start(ctx, key, info, obj.ETag, sent, "acquired by takeover"), nil
	case errors.Is(err, objstore.ErrNotFound):
		return nil, errRetry
	case errors.Is(err, objstore.ErrPrecondition):
		return nil, c.lostTakeover(ctx, key, holder)
	default:
		return c.landed(ctx, key, info.Token, sent, fmt.Errorf("take over lock %q: %w", key, err))
	}
}

// lostTakeover reports the rival that beat us to an expired lease, naming the
// new holder when it can be read.
func (c *locker) lostTakeover(ctx context.Context, key string, old Info) error {
	data, cur, err := c.store.Get(ctx, key, MaxLeaseBytes)
	if err == nil {
		if holder, perr := Parse(data); perr == nil {
			holder.Modified = cur.LastModified
			return &LockedError{Key: key, Holder: holder, TakeoverAt: holder.TakeoverAt(cur.LastModified, c.skew)}
		}
	}
	return &LockedError{Key: key, Holder: old, TakeoverAt: old.TakeoverAt(old.Modified, c.skew)}
}

// landed resolves an ambiguous create or takeover: a write that timed out may
// still have been applied, so re-read and compare the token. If the lease is
// ours we hold it (its deadline counted from before the write was sent); if
// the caller has given up meanwhile, give it back.
func (c *locker) landed(ctx context.Context, key, token string, sent time.Time, writeErr error) (*Lease, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	data, obj, err := c.store.Get(rctx, key, MaxLeaseBytes)
	if err != nil {
		return nil, writeErr
	}
	info, err := Parse(data)
	if err != nil || info.Token != token {
		return nil, writeErr
	}
	if ctx.Err() != nil {
		if err := c.store.DeleteIfMatch(rctx, key, obj.ETag); err != nil {
			c.log.WarnContext(ctx, "could not give back lease after cancelled acquire", logLease, key, logOwner, c.owner, "error", err)
		}
		return nil, writeErr
	}
	c.log.InfoContext(ctx, "ambiguous write landed", logLease, key, logOwner, c.owner, "error", writeErr)
	return c.start(ctx, key, info, obj.ETag, sent, "acquired after ambiguous write"), nil
}
