package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// This file owns how a bucket store reads its clock. The protocol allows a
// deletion or a lease takeover only by the clock that stamps LastModified:
// on S3, GCS and Azure, the service's, which dates every response in its
// Date header. A backend feeds every response it receives to a DateClock
// (error answers too: a 404 or a 412 is dated like a 200), which keeps the
// Date with the local monotonic time it arrived; Now adds the time elapsed
// since. A host clock days off changes nothing: only durations are
// measured locally.

// DefaultClockMaxAge is how old the latest Date may be before a store asks
// the service again: the local elapsed clock only bridges short gaps, so a
// rate difference between it and the service's clock cannot add up.
const DefaultClockMaxAge = 30 * time.Second

// ClockProbeKey is the key (under the root) a bucket store reads the
// metadata of when it has no fresh Date. reaper never writes it (it is in
// the reserved _reaper/ area of the key layout); any answer, the expected
// 404 included (or a 403 without the list permission), carries a Date, and
// a metadata read costs a GET-class request and reads no listing.
const ClockProbeKey = "_reaper/clock"

// ErrNoDate: the store's clock cannot be read, so nothing that needs it
// may be allowed (fail closed).
var ErrNoDate = errors.New("the store sends no Date header: reaper needs the store's clock to allow deletions and lease takeovers")

// DateClock keeps the reading of a store's clock that extrapolates
// furthest. The zero value is ready; it is safe for concurrent use.
type DateClock struct {
	mu      sync.Mutex
	latest  dateReading
	seen    time.Time // arrival of the last dated response
	answers uint64    // responses recorded, dated or not
}

// dateReading is one observation of the store's clock.
type dateReading struct {
	store time.Time // the store's time, a lower bound at arrival
	local time.Time // when it arrived, with the monotonic reading
}

// Record takes the headers of one response that arrived at local (a
// time.Now() value, so it carries the monotonic reading) and returns its
// Date; ok is false when it has none that parses.
//
// A Last-Modified header in the same response may lift the reading above
// Date by at most TimeResolution: some servers cache their Date header
// (versitygw v1.8.0 refreshes it once a second, so it often reads a second
// behind the LastModified of an object written just before), while an
// object's LastModified is a time the store's clock has passed. The cap
// keeps a LastModified that is not the store's (a file whose mtime was set
// in the future behind a posix gateway) from moving the clock by more than
// the resolution the contract allows.
func (c *DateClock) Record(h http.Header, local time.Time) (date time.Time, ok bool) {
	date, err := http.ParseTime(h.Get("Date"))
	store := date
	if lm, lerr := http.ParseTime(h.Get("Last-Modified")); err == nil && lerr == nil && lm.After(store) {
		store = lm
		if ceiling := date.Add(TimeResolution); store.After(ceiling) {
			store = ceiling
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers++
	if err != nil {
		return time.Time{}, false
	}
	// Keep the reading that extrapolates furthest (the greatest store time
	// minus arrival), not the latest or the greatest Date: every reading is
	// a lower bound, so the greatest extrapolation is one too, and Now never
	// steps back when a newer answer carries a Date truncated further (a
	// Date of 10:00:01 arriving at 10:00:01.9 bounds less than 10:00:00
	// that arrived at 10:00:00.0, extrapolated).
	if c.latest.local.IsZero() || store.Sub(c.latest.store) > local.Sub(c.latest.local) {
		c.latest = dateReading{store: store, local: local}
	}
	if local.After(c.seen) {
		c.seen = local
	}
	return date, true
}

// reading extrapolates the kept reading by the time elapsed since it
// arrived; fresh tells whether a dated response arrived within maxAge, ok
// whether any did.
func (c *DateClock) reading(maxAge time.Duration) (now time.Time, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.local.IsZero() {
		return time.Time{}, false, false
	}
	return c.latest.store.Add(time.Since(c.latest.local)), time.Since(c.seen) < maxAge, true
}

func (c *DateClock) answered() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers
}

// Now reads the store's clock: the kept Date plus the local time elapsed
// since it arrived, a lower bound of the service's clock (the Date was
// written before the answer arrived, and is truncated to the second).
// Without a Date from the last maxAge (DefaultClockMaxAge when zero) it
// first calls probe, one cheap request of ClockProbeKey whose outcome does
// not matter, only that the service answered; in a pass, whose requests
// keep the Date fresh, it sends none. probe's error counts only when no
// answer arrived (a network failure, not the expected 404). uri names the
// store in the error.
func (c *DateClock) Now(ctx context.Context, uri string, maxAge time.Duration, probe func(context.Context) error) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	if maxAge <= 0 {
		maxAge = DefaultClockMaxAge
	}
	if now, fresh, ok := c.reading(maxAge); ok && fresh {
		return now, nil
	}
	before := c.answered()
	if err := probe(ctx); err != nil && c.answered() == before {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	// A probe answered without a Date still leaves an older reading usable.
	if now, _, ok := c.reading(maxAge); ok {
		return now, nil
	}
	return time.Time{}, fmt.Errorf("read the store's clock of %s: %w", uri, ErrNoDate)
}

// RoundTripper returns next (http.DefaultTransport when nil) with every
// response recorded, for clients that take an *http.Client.
func (c *DateClock) RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &dateRecorder{next: next, clock: c}
}

// dateRecorder is the RoundTripper that feeds a DateClock.
type dateRecorder struct {
	next  http.RoundTripper
	clock *DateClock
}

func (d *dateRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if resp != nil {
		d.clock.Record(resp.Header, time.Now())
	}
	return resp, err
}
