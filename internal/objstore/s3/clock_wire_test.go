package s3_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// serverTime is a Date far from the host's clock, so a test can tell the
// store's clock from the host's.
var serverTime = time.Date(2001, time.February, 3, 4, 5, 6, 0, time.UTC)

func dated(w http.ResponseWriter, at time.Time) {
	w.Header().Set("Date", at.UTC().Format(http.TimeFormat))
}

// undated suppresses the Date header Go's server adds by itself.
func undated(w http.ResponseWriter) { w.Header()["Date"] = nil }

// requireServerTime checks that now reads the fake server's clock: not
// before at, and not later than the test could have taken since.
func requireServerTime(t *testing.T, at, now time.Time, msg string) {
	t.Helper()
	require.False(t, now.Before(at), "%s: Now %s is before the server's Date %s", msg, now, at)
	require.Less(t, now.Sub(at), time.Minute, "%s: Now %s is not the server's Date %s plus a little", msg, now, at)
}

func TestWireClockDateFrom200(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		dated(w, serverTime)
		w.Header().Set("ETag", `"e"`)
	})
	_, err := st.Head(t.Context(), "k")
	require.NoError(t, err)
	now, err := st.Now(t.Context())
	require.NoError(t, err)
	requireServerTime(t, serverTime, now, "after a 200")
	require.Len(t, f.requests(), 1, "a fresh Date costs Now no request")
}

// Error answers are dated like any other: a 404 or a 412 feeds the clock.
func TestWireClockDateFromErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		code   string
		call   func(t *testing.T, st *s3.Store) error
	}{
		"404 head": {404, "NoSuchKey", func(t *testing.T, st *s3.Store) error {
			_, err := st.Head(t.Context(), "k")
			return err
		}},
		"412 put if match": {412, "PreconditionFailed", func(t *testing.T, st *s3.Store) error {
			_, err := st.PutIfMatch(t.Context(), "k", []byte("x"), "old")
			return err
		}},
	} {
		t.Run(name, func(t *testing.T) {
			st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				dated(w, serverTime)
				s3Error(w, tc.status, tc.code)
			})
			require.Error(t, tc.call(t, st))
			now, err := st.Now(t.Context())
			require.NoError(t, err)
			requireServerTime(t, serverTime, now, name)
			require.Len(t, f.requests(), 1, "the error's Date is fresh: Now sends nothing")
		})
	}
}

func TestWireClockAdvancesWithoutRequests(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		dated(w, serverTime)
		w.Header().Set("ETag", `"e"`)
	})
	_, err := st.Head(t.Context(), "k")
	require.NoError(t, err)
	first, err := st.Now(t.Context())
	require.NoError(t, err)
	const pause = 30 * time.Millisecond
	time.Sleep(pause) // elapsed time is what is measured here
	second, err := st.Now(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, second.Sub(first), pause, "Now advances by the local elapsed time")
	require.Len(t, f.requests(), 1, "advancing costs no request")
}

// Without a fresh Date, Now sends exactly one HEAD of a fixed key under the
// root (a 404 is expected and fine); with one, none.
func TestWireClockProbe(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		dated(w, serverTime)
		s3Error(w, 404, "NoSuchKey")
	})
	now, err := st.Now(t.Context())
	require.NoError(t, err)
	requireServerTime(t, serverTime, now, "after the probe")
	reqs := f.requests()
	require.Len(t, reqs, 1, "one request when no Date was ever seen")
	require.Equal(t, http.MethodHead, reqs[0].Method)
	require.Equal(t, "/bkt/root/_reaper/clock", reqs[0].Path)

	_, err = st.Now(t.Context())
	require.NoError(t, err)
	require.Len(t, f.requests(), 1, "no request while the Date is fresh")

	st.ClockMaxAge = time.Nanosecond // every Date is stale
	_, err = st.Now(t.Context())
	require.NoError(t, err)
	require.Len(t, f.requests(), 2, "exactly one request for a stale Date")
}

// A store that sends no Date cannot give its clock: Now fails closed,
// unless an earlier answer was dated.
func TestWireClockNoDate(t *testing.T) {
	var mu sync.Mutex
	sendDate := false
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		mu.Lock()
		defer mu.Unlock()
		if sendDate {
			dated(w, serverTime)
		} else {
			undated(w)
		}
		w.Header().Set("ETag", `"e"`)
	})
	_, err := st.Now(t.Context())
	require.Error(t, err, "no Date header")
	require.Contains(t, err.Error(), "sends no Date header")
	require.Len(t, f.requests(), 1, "one probe")
	obj, err := st.Put(t.Context(), "k", []byte("x"))
	require.NoError(t, err, "a write does not need the clock")
	require.True(t, obj.LastModified.IsZero(), "no Date, no store time for the write")

	mu.Lock()
	sendDate = true
	mu.Unlock()
	_, err = st.Head(t.Context(), "k")
	require.NoError(t, err)
	mu.Lock()
	sendDate = false
	mu.Unlock()
	st.ClockMaxAge = time.Nanosecond
	now, err := st.Now(t.Context())
	require.NoError(t, err, "an earlier Date still reads the clock")
	requireServerTime(t, serverTime, now, "after an undated probe")
}

// Answers recorded out of order keep the greatest Date.
func TestWireClockKeepsGreatestDate(t *testing.T) {
	var mu sync.Mutex
	dates := []time.Time{serverTime.Add(10 * time.Second), serverTime}
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		mu.Lock()
		at := dates[0]
		dates = dates[1:]
		mu.Unlock()
		dated(w, at)
		w.Header().Set("ETag", `"e"`)
	})
	for range 2 {
		_, err := st.Head(t.Context(), "k")
		require.NoError(t, err)
	}
	now, err := st.Now(t.Context())
	require.NoError(t, err)
	requireServerTime(t, serverTime.Add(10*time.Second), now, "the earlier, greater Date")
}

// A Last-Modified in the same answer lifts a lagging Date (versitygw
// caches its Date for up to a second), by at most the store's resolution.
func TestWireClockLastModifiedLift(t *testing.T) {
	for name, tc := range map[string]struct{ lm, want time.Duration }{
		"lagging date": {lm: time.Second, want: time.Second},
		"capped":       {lm: time.Hour, want: objstore.TimeResolution},
		"older object": {lm: -time.Hour, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				dated(w, serverTime)
				w.Header().Set("Last-Modified", serverTime.Add(tc.lm).Format(http.TimeFormat))
				w.Header().Set("ETag", `"e"`)
			})
			_, err := st.Head(t.Context(), "k")
			require.NoError(t, err)
			now, err := st.Now(t.Context())
			require.NoError(t, err)
			requireServerTime(t, serverTime.Add(tc.want), now, name)
			require.Less(t, now.Sub(serverTime.Add(tc.want)), 5*time.Second, "lifted no further than %v", tc.want)
		})
	}
}

func TestWireClockConcurrent(t *testing.T) {
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		dated(w, serverTime)
		w.Header().Set("ETag", `"e"`)
	})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 8 {
		wg.Go(func() {
			for range 4 {
				if _, err := st.Head(t.Context(), "k"); err != nil {
					errs <- err
				}
				if _, err := st.Now(t.Context()); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// Put's LastModified is the store's clock at the write: its answer's Date,
// not the host's clock.
func TestWirePutLastModifiedIsServerDate(t *testing.T) {
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		dated(w, serverTime)
		w.Header().Set("ETag", `"e"`)
	})
	obj, err := st.Put(t.Context(), "k", []byte("x"))
	require.NoError(t, err)
	require.True(t, serverTime.Equal(obj.LastModified), "LastModified: got %s, want the server's Date %s", obj.LastModified, serverTime)
}
