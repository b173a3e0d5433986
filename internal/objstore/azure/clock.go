package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the store's clock. The protocol allows a deletion or a
// lease takeover only by the clock that stamps LastModified: on Azure, the
// service's, which dates every response in its Date header. A pipeline
// policy records the Date of every response (error answers too) with the
// local monotonic time it arrived, and Now adds the time elapsed since.
// Only durations are measured locally, so a host clock days off changes
// nothing. The reading rule is package s3's (clock.go there).

// DefaultClockMaxAge is how old the latest Date may be before Now asks the
// service again.
const DefaultClockMaxAge = 30 * time.Second

// clockProbeKey is the blob (under the root) Now reads the properties of
// when it has no fresh Date: reaper never writes it, and the expected 404
// carries a Date like any answer.
const clockProbeKey = "_reaper/clock"

// errNoDate: the store's clock cannot be read, so nothing that needs it may
// be allowed (fail closed).
var errNoDate = errors.New("the store sends no Date header: reaper needs the store's clock to allow deletions and lease takeovers")

type reading struct {
	store time.Time // the store's time, a lower bound at arrival
	local time.Time // when it arrived, with the monotonic reading
}

// clock keeps the reading that extrapolates furthest. Safe for concurrent
// use.
type clock struct {
	mu     sync.Mutex
	latest reading
	seen   time.Time // arrival of the last dated response
}

// record takes the Date of one response that arrived at local; a
// Last-Modified in the same response lifts it by at most
// objstore.TimeResolution (both are whole seconds; the blob's time is one
// the store's clock has passed).
func (c *clock) record(h http.Header, local time.Time) {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	store := date
	if lm, err := http.ParseTime(h.Get("Last-Modified")); err == nil && lm.After(store) {
		store = earlier(lm, date.Add(objstore.TimeResolution))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.local.IsZero() || store.Sub(c.latest.store) > local.Sub(c.latest.local) {
		c.latest = reading{store: store, local: local}
	}
	if local.After(c.seen) {
		c.seen = local
	}
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// now extrapolates the kept reading; fresh tells whether a dated response
// arrived within maxAge, ok whether any did.
func (c *clock) now(maxAge time.Duration) (now time.Time, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.local.IsZero() {
		return time.Time{}, false, false
	}
	return c.latest.store.Add(time.Since(c.latest.local)), time.Since(c.seen) < maxAge, true
}

// clockPolicy is the per-try pipeline policy that feeds the clock: it sees
// every raw response, whatever its status, before the SDK turns it into an
// error.
type clockPolicy struct{ c *clock }

func (p clockPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if resp != nil {
		p.c.record(resp.Header, time.Now())
	}
	return resp, err
}

func (s *Store) clockMaxAge() time.Duration {
	if s.ClockMaxAge > 0 {
		return s.ClockMaxAge
	}
	return DefaultClockMaxAge
}

// Now reads the store's clock: the Date the service answered with, plus
// the local time elapsed since that answer arrived, a lower bound of the
// service's clock. Without a Date from the last ClockMaxAge it first sends
// one Get Blob Properties of clockProbeKey.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	if now, fresh, ok := s.clock.now(s.clockMaxAge()); ok && fresh {
		return now, nil
	}
	before := s.clock.arrivals()
	_, err := s.client.NewBlobClient(s.root+clockProbeKey).GetProperties(ctx, nil)
	if err != nil && s.clock.arrivals() == before {
		// No dated answer arrived: a network failure, not a 404.
		if err = mapError(err); !errors.Is(err, objstore.ErrNotFound) {
			return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
		}
	}
	if now, _, ok := s.clock.now(s.clockMaxAge()); ok {
		return now, nil
	}
	return time.Time{}, fmt.Errorf("read the store's clock of %s: %w", s.URI(), errNoDate)
}

// arrivals is the arrival time of the last dated response, to tell whether
// a request got one.
func (c *clock) arrivals() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}
