package s3

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var dateA = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

// The store's clock never steps back: a newer answer whose Date was
// truncated further than an older one's (10:00:01 arriving 1.9 s after
// 10:00:00) extrapolates to less, and the older reading is kept.
func TestClockNeverStepsBack(t *testing.T) {
	var c clock
	base := time.Now()
	header := func(at time.Time) http.Header {
		h := http.Header{}
		h.Set("Date", at.UTC().Format(http.TimeFormat))
		return h
	}
	_, ok := c.record(header(dateA), base)
	require.True(t, ok)
	first, _, _ := c.now(time.Minute)
	_, ok = c.record(header(dateA.Add(time.Second)), base.Add(1900*time.Millisecond))
	require.True(t, ok)
	second, _, _ := c.now(time.Minute)
	require.False(t, second.Before(first), "Now went back from %s to %s", first, second)
	require.Equal(t, dateA, c.latest.store, "the reading that extrapolates furthest is kept")
	_, ok = c.record(header(dateA.Add(3*time.Second)), base.Add(2*time.Second))
	require.True(t, ok)
	require.Equal(t, dateA.Add(3*time.Second), c.latest.store, "a reading that extrapolates further replaces it")
}
