package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the store's clock. The protocol allows a deletion or a
// lease takeover only by the clock that stamps LastModified: on GCS, the
// service's, which dates every response in its Date header. The transport
// under the client records the Date of every response (errors too: a 404
// or a 412 is dated like a 200) with the local monotonic time it arrived,
// and Now adds the time elapsed since. A host clock days off changes
// nothing: only durations are measured locally.

// DefaultClockMaxAge is how old the latest Date may be before Now asks the
// service again: the local elapsed clock only bridges short gaps.
const DefaultClockMaxAge = 30 * time.Second

// clockProbeKey is the key (under the root) Now reads the metadata of when
// it has no fresh Date. reaper never writes it; any answer, the expected
// 404 included, carries a Date.
const clockProbeKey = "_reaper/clock"

// errNoDate: the store's clock cannot be read, so nothing that needs it may
// be allowed (fail closed).
var errNoDate = errors.New("the store sends no Date header: reaper needs the store's clock to allow deletions and lease takeovers")

// reading is one observation of the store's clock.
type reading struct {
	store time.Time // the store's time, a lower bound at arrival
	local time.Time // when it arrived, with the monotonic reading
}

// clock keeps the reading of the store's clock that extrapolates furthest.
// It is safe for concurrent use.
type clock struct {
	mu     sync.Mutex
	latest reading
	seen   time.Time // arrival of the last dated response
}

// record takes the Date header of one response that arrived at local.
func (c *clock) record(h http.Header, local time.Time) {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Every reading is a lower bound, so the one that extrapolates
	// furthest is one too, and Now never steps back when a later answer
	// carries a Date truncated further.
	if c.latest.local.IsZero() || date.Sub(c.latest.store) > local.Sub(c.latest.local) {
		c.latest = reading{store: date, local: local}
	}
	if local.After(c.seen) {
		c.seen = local
	}
}

// now extrapolates the best reading by the time elapsed since it arrived;
// fresh tells whether a dated response arrived within maxAge, ok whether
// any did.
func (c *clock) now(maxAge time.Duration) (now time.Time, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.local.IsZero() {
		return time.Time{}, false, false
	}
	return c.latest.store.Add(time.Since(c.latest.local)), time.Since(c.seen) < maxAge, true
}

// recorder returns the transport the client sends through: next (nil:
// http.DefaultTransport) with every response's Date recorded.
func (c *clock) recorder(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &dateRecorder{next: next, clock: c}
}

// dateRecorder is the RoundTripper that feeds the clock.
type dateRecorder struct {
	next  http.RoundTripper
	clock *clock
}

func (d *dateRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if resp != nil {
		d.clock.record(resp.Header, time.Now())
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
// the local time elapsed since that answer arrived; a lower bound of the
// service's clock (Date is truncated to the second). Without a Date from
// the last ClockMaxAge it first reads the metadata of clockProbeKey.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	if now, fresh, ok := s.clock.now(s.clockMaxAge()); ok && fresh {
		return now, nil
	}
	before := s.clock.lastSeen()
	_, err := s.bucket().Object(s.root + clockProbeKey).Attrs(ctx)
	if now, _, ok := s.clock.now(s.clockMaxAge()); ok && s.clock.lastSeen().After(before) {
		return now, nil
	}
	if err != nil && !errors.Is(mapError(err), objstore.ErrNotFound) {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", mapError(err))
	}
	return time.Time{}, fmt.Errorf("read the store's clock of %s: %w", s.URI(), errNoDate)
}

// lastSeen is when the last dated response arrived.
func (c *clock) lastSeen() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}
