package objstore

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var dateA = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

func dated(date, lastModified time.Time) http.Header {
	h := http.Header{}
	if !date.IsZero() {
		h.Set("Date", date.UTC().Format(http.TimeFormat))
	}
	if !lastModified.IsZero() {
		h.Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
	}
	return h
}

// The store's clock never steps back: a newer answer whose Date was
// truncated further than an older one's (10:00:01 arriving 1.9 s after
// 10:00:00) extrapolates to less, and the older reading is kept.
func TestDateClockNeverStepsBack(t *testing.T) {
	var c DateClock
	base := time.Now()
	_, ok := c.Record(dated(dateA, time.Time{}), base)
	require.True(t, ok)
	first, _, _ := c.reading(time.Minute)
	_, ok = c.Record(dated(dateA.Add(time.Second), time.Time{}), base.Add(1900*time.Millisecond))
	require.True(t, ok)
	second, _, _ := c.reading(time.Minute)
	require.False(t, second.Before(first), "Now went back from %s to %s", first, second)
	require.Equal(t, dateA, c.latest.store, "the reading that extrapolates furthest is kept")
	_, ok = c.Record(dated(dateA.Add(3*time.Second), time.Time{}), base.Add(2*time.Second))
	require.True(t, ok)
	require.Equal(t, dateA.Add(3*time.Second), c.latest.store, "a reading that extrapolates further replaces it")
}

// A Last-Modified lifts the reading above a cached Date by at most
// TimeResolution, never further.
func TestDateClockLastModifiedLift(t *testing.T) {
	for _, tc := range []struct {
		name string
		lm   time.Time
		want time.Time
	}{
		{"older", dateA.Add(-time.Hour), dateA},
		{"within the resolution", dateA.Add(TimeResolution), dateA.Add(TimeResolution)},
		{"far in the future", dateA.Add(time.Hour), dateA.Add(TimeResolution)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c DateClock
			date, ok := c.Record(dated(dateA, tc.lm), time.Now())
			require.True(t, ok)
			require.Equal(t, dateA, date, "Record returns the Date itself")
			require.Equal(t, tc.want, c.latest.store)
		})
	}
}

// Now probes only without a fresh Date, counts the probe's error only when
// no answer arrived, and fails closed when no answer was ever dated.
func TestDateClockNow(t *testing.T) {
	ctx := context.Background()
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name      string
		primed    bool   // a fresh dated answer arrived before Now
		answer    string // what the probe's response carries: "dated", "undated" or "" (none arrived)
		probeErr  error
		wantProbe bool
		wantErr   error
	}{
		{name: "fresh: no probe", primed: true, wantProbe: false},
		{name: "stale: the probe's 404 dates it", answer: "dated", probeErr: ErrNotFound, wantProbe: true},
		{name: "no answer: the network error", probeErr: down, wantProbe: true, wantErr: down},
		{name: "answered without a Date: fail closed", answer: "undated", probeErr: ErrNotFound, wantProbe: true, wantErr: ErrNoDate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c DateClock
			if tc.primed {
				c.Record(dated(time.Now(), time.Time{}), time.Now())
			}
			probed := false
			now, err := c.Now(ctx, "s3://b/p", time.Minute, func(context.Context) error {
				probed = true
				switch tc.answer {
				case "dated":
					c.Record(dated(time.Now(), time.Time{}), time.Now())
				case "undated":
					c.Record(http.Header{}, time.Now())
				}
				return tc.probeErr
			})
			require.Equal(t, tc.wantProbe, probed)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.WithinDuration(t, time.Now(), now, 2*time.Second)
		})
	}
}
