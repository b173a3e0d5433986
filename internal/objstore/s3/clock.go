package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the store's clock. The protocol allows a deletion or a
// lease takeover only by the clock that stamps LastModified: on S3, the
// server's, which dates every response in its Date header. The store
// records the Date of every response it receives (error answers too: a 404
// or a 412 is dated like a 200) with the local monotonic time it arrived,
// and Now adds the time elapsed since. A host clock days off changes
// nothing: only durations are measured locally.

// DefaultClockMaxAge is how old the latest Date may be before Now asks the
// server again: the local elapsed clock only bridges short gaps, so a rate
// difference between it and the server's clock cannot add up.
const DefaultClockMaxAge = 30 * time.Second

// clockProbeKey is the key (under the root) Now heads when it has no fresh
// Date. reaper never writes it; any answer, the expected 404 included (or
// 403 without s3:ListBucket), carries a Date. A HEAD needs only the read
// permission reaper has anyway, costs a GET-class request and reads no
// listing.
const clockProbeKey = "_reaper/clock"

// clockMiddlewareID names the Date-capturing middleware in the SDK stack.
const clockMiddlewareID = "reaper.StoreClock"

// errNoDate: the store's clock cannot be read, so nothing that needs it may
// be allowed (fail closed).
var errNoDate = errors.New("the store sends no Date header: reaper needs the store's clock to allow deletions and lease takeovers")

// reading is one observation of the store's clock.
type reading struct {
	store time.Time // the store's time, a lower bound at arrival
	local time.Time // when it arrived, with the monotonic reading
}

// clock keeps the latest reading of the store's clock. It is safe for
// concurrent use.
type clock struct {
	mu     sync.Mutex
	latest reading   // the greatest store time seen; zero when none
	seen   time.Time // arrival of the last dated response
}

// record takes the Date header of one response that arrived at local (a
// time.Now() value, so it carries the monotonic reading) and returns it;
// ok is false when the response has no parsable Date.
//
// A Last-Modified header in the same response may lift the reading above
// Date by at most objstore.TimeResolution: some servers cache their Date
// header (versitygw v1.8.0 refreshes it once a second, so it often reads a
// second behind the LastModified of an object written just before), while
// an object's LastModified is a time the store's clock has passed. The cap
// keeps a LastModified that is not the store's (a file whose mtime was set
// in the future behind a posix gateway) from moving the clock by more than
// the resolution the contract allows.
func (c *clock) record(h http.Header, local time.Time) (date time.Time, ok bool) {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return time.Time{}, false
	}
	store := date
	if lm, err := http.ParseTime(h.Get("Last-Modified")); err == nil && lm.After(store) {
		store = lm
		if ceiling := date.Add(objstore.TimeResolution); store.After(ceiling) {
			store = ceiling
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Keep the reading that extrapolates furthest (the greatest store time
	// minus arrival), not the latest or the greatest Date: every reading is
	// a lower bound, so the greatest extrapolation is one too, and Now never
	// steps back when a newer answer carries a Date truncated further (a
	// Date of 10:00:01 arriving at 10:00:01.9 bounds less than 10:00:00
	// that arrived at 10:00:00.0, extrapolated).
	if c.latest.local.IsZero() || store.Sub(c.latest.store) > local.Sub(c.latest.local) {
		c.latest = reading{store: store, local: local}
	}
	if local.After(c.seen) {
		c.seen = local
	}
	return date, true
}

// now extrapolates the latest reading by the time elapsed since it arrived;
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

// answer is what one call's middleware saw of its response.
type answer struct {
	responded bool      // an HTTP response arrived (any status)
	date      time.Time // its Date; zero when it had none
}

// observe is the per-call SDK option every request of the store carries: a
// Deserialize-step middleware, innermost so it sees the raw response of
// every status before any error handling, that records the response's Date
// in the store's clock and, when dst is not nil, in dst. Passed per call,
// it leaves fakes of the API interface working.
func (s *Store) observe(dst *answer) func(*s3.Options) {
	mw := middleware.DeserializeMiddlewareFunc(clockMiddlewareID, func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil && resp.Response != nil {
			date, _ := s.clock.record(resp.Header, time.Now())
			if dst != nil {
				dst.responded, dst.date = true, date
			}
		}
		return out, md, err
	})
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Deserialize.Add(mw, middleware.After)
		})
	}
}

func (s *Store) clockMaxAge() time.Duration {
	if s.ClockMaxAge > 0 {
		return s.ClockMaxAge
	}
	return DefaultClockMaxAge
}

// Now reads the store's clock: the greatest Date the server answered with,
// plus the local time elapsed since that answer arrived. That is a lower
// bound of the server's clock (the Date was written before the answer
// arrived, and is truncated to the second). Without a Date from the last
// ClockMaxAge it first sends one HEAD of clockProbeKey; in a pass, whose
// requests keep the Date fresh, it sends none.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	if now, fresh, ok := s.clock.now(s.clockMaxAge()); ok && fresh {
		return now, nil
	}
	if err := s.probeClock(ctx); err != nil {
		return time.Time{}, err
	}
	// A probe answered without a Date still leaves an older reading usable.
	if now, _, ok := s.clock.now(s.clockMaxAge()); ok {
		return now, nil
	}
	return time.Time{}, fmt.Errorf("read the store's clock of %s: %w", s.URI(), errNoDate)
}

// probeClock sends the one cheap request Now needs for a fresh Date. Its
// outcome does not matter, only that the server answered.
func (s *Store) probeClock(ctx context.Context) error {
	var a answer
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.loc.Bucket),
		Key:    aws.String(s.root + clockProbeKey),
	}, s.observe(&a))
	if !a.responded && err != nil {
		return fmt.Errorf("read the store's clock: %w", mapError(err))
	}
	return nil
}
