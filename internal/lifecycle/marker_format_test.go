package lifecycle

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEncodeMarkerIsCompactAndOrdered(t *testing.T) {
	got := EncodeMarker(time.UnixMilli(1767225600000), 7*24*time.Hour)
	require.Equal(t, `{"deleted_at_ms":1767225600000,"ttl_ms":604800000}`, string(got))
	m, err := ParseMarker(got)
	require.NoError(t, err)
	require.Equal(t, Marker{DeletedAtMs: 1767225600000, TTLMs: 604800000, HasTTL: true}, m)
}

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Marker
		err  string // "" = must parse
	}{
		{"compact", `{"deleted_at_ms":1000,"ttl_ms":2000}`, Marker{1000, 2000, true}, ""},
		{"reversed keys", `{"ttl_ms":2000,"deleted_at_ms":1000}`, Marker{1000, 2000, true}, ""},
		{"whitespace", " {\n  \"deleted_at_ms\" : 1000 ,\n\t\"ttl_ms\": 2000\n}\n", Marker{1000, 2000, true}, ""},
		{"unknown keys", `{"version":2,"deleted_at_ms":1000,"by":{"host":"a"},"ttl_ms":2000,"note":null}`, Marker{1000, 2000, true}, ""},
		{"missing ttl uses default", `{"deleted_at_ms":1000}`, Marker{1000, 0, false}, ""},
		{"zero ttl", `{"deleted_at_ms":0,"ttl_ms":0}`, Marker{0, 0, true}, ""},
		{"max int64", `{"deleted_at_ms":9223372036854775807,"ttl_ms":9223372036854775807}`, Marker{math.MaxInt64, math.MaxInt64, true}, ""},
		{"empty", ``, Marker{}, "not a JSON object"},
		{"garbage", `not json at all`, Marker{}, "not a JSON object"},
		{"array", `[1,2]`, Marker{}, "not a JSON object"},
		{"null", `null`, Marker{}, "not a JSON object"},
		{"truncated", `{"deleted_at_ms":1000,"ttl_ms":`, Marker{}, "not a JSON object"},
		{"trailing data", `{"deleted_at_ms":1000}{"x":1}`, Marker{}, "trailing data"},
		{"trailing brace", `{"deleted_at_ms":1000}}`, Marker{}, "trailing data"},
		{"trailing bracket", "{\"deleted_at_ms\":1000}\n]", Marker{}, "trailing data"},
		{"repeated deleted_at", `{"deleted_at_ms":1000,"ttl_ms":1,"deleted_at_ms":5}`, Marker{}, `key "deleted_at_ms" appears twice`},
		{"repeated ttl", `{"ttl_ms":1,"deleted_at_ms":1000,"ttl_ms":1}`, Marker{}, `key "ttl_ms" appears twice`},
		{"a field in another case", `{"deleted_at_ms":0,"delEted_At_ms":1}`, Marker{}, `key "delEted_At_ms" is "deleted_at_ms" in another case`},
		{"ttl in another case", `{"deleted_at_ms":1000,"TTL_MS":5}`, Marker{}, `key "TTL_MS" is "ttl_ms" in another case`},
		{"long s folds to s", "{\"deleted_at_ms\":1000,\"ttl_m\u017f\":5}", Marker{}, `in another case`},
		{"repeated unknown key", `{"note":1,"deleted_at_ms":1000,"note":2}`, Marker{1000, 0, false}, ""},
		{"object key not a string", `{1:2}`, Marker{}, "not a JSON object"},
		{"missing deleted_at", `{"ttl_ms":1000}`, Marker{}, "missing deleted_at_ms"},
		{"negative deleted_at", `{"deleted_at_ms":-1,"ttl_ms":1000}`, Marker{}, "deleted_at_ms is negative"},
		{"negative ttl", `{"deleted_at_ms":1,"ttl_ms":-5}`, Marker{}, "ttl_ms is negative"},
		{"float", `{"deleted_at_ms":1000.5,"ttl_ms":1}`, Marker{}, "want a non-negative integer"},
		{"exponent", `{"deleted_at_ms":1e3,"ttl_ms":1}`, Marker{}, "want a non-negative integer"},
		{"string number", `{"deleted_at_ms":"1000","ttl_ms":1}`, Marker{}, "want a non-negative integer"},
		{"null value", `{"deleted_at_ms":null}`, Marker{}, "want a non-negative integer"},
		{"overflow", `{"deleted_at_ms":9223372036854775808}`, Marker{}, "want a non-negative integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMarker([]byte(tc.body))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidMarker)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestMarkerTTLAndPurgeAfter(t *testing.T) {
	def := time.Hour
	for _, tc := range []struct {
		name       string
		m          Marker
		wantTTL    time.Duration
		wantPurgMs int64
	}{
		{"explicit ttl", Marker{1000, 2000, true}, 2 * time.Second, 3000},
		{"default ttl", Marker{1000, 0, false}, time.Hour, 1000 + 3600000},
		{"zero ttl is due at once", Marker{1000, 0, true}, 0, 1000},
		{"saturates", Marker{math.MaxInt64 - 5, 10, true}, 10 * time.Millisecond, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantTTL, tc.m.TTL(def))
			require.Equal(t, tc.wantPurgMs, tc.m.PurgeAfterMs(def))
		})
	}
}

func TestDueBoundary(t *testing.T) {
	m := Marker{DeletedAtMs: 10_000, TTLMs: 5_000, HasTTL: true}
	ns := &Namespace{opts: Options{DefaultTTL: DefaultTTL, SkewAllowance: DefaultSkewAllowance}}
	for _, tc := range []struct {
		nowMs int64
		due   bool
	}{{14_999, false}, {15_000, true}, {15_001, true}, {0, false}} {
		var s TableStatus
		now := time.UnixMilli(tc.nowMs)
		ns.fillMarker(&s, m, time.Time{}, now)
		require.Equal(t, tc.due, s.Due(now), "now=%d", tc.nowMs)
	}
}

// TestDueByStoreClock: a table is due only once both deleted_at + ttl (the
// dropper's clock) and the marker's LastModified + ttl (the store's clock,
// LastModified as the store reports it) have passed. A dropper 7 days behind cannot make a
// fresh 7-day drop due at once.
func TestDueByStoreClock(t *testing.T) {
	const week = 7 * 24 * time.Hour
	ns := &Namespace{opts: Options{DefaultTTL: DefaultTTL, SkewAllowance: DefaultSkewAllowance}}
	stored := time.UnixMilli(1_700_000_000_000) // when the store wrote the marker
	for _, tc := range []struct {
		name      string
		deletedAt time.Time // the dropper's clock
		now       time.Time // the store's clock
		due       bool
	}{
		{"dropper 7 days behind, fresh drop", stored.Add(-week), stored.Add(time.Minute), false},
		{"dropper 7 days behind, a week later", stored.Add(-week), stored.Add(week), true},
		{"dropper on time, one ms early", stored, stored.Add(week - time.Millisecond), false},
		{"dropper on time", stored, stored.Add(week), true},
		{"dropper a minute ahead", stored.Add(time.Minute), stored.Add(week + time.Second), false},
		{"dropper a minute ahead, later", stored.Add(time.Minute), stored.Add(week + time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s TableStatus
			m := Marker{DeletedAtMs: tc.deletedAt.UnixMilli(), TTLMs: week.Milliseconds(), HasTTL: true}
			ns.fillMarker(&s, m, stored, tc.now)
			require.Equal(t, tc.due, s.Due(tc.now), "purge_after %s", s.PurgeAfter)
		})
	}
}

func TestFutureDatedMarkerIsNeverDue(t *testing.T) {
	ns := &Namespace{opts: Options{DefaultTTL: DefaultTTL, SkewAllowance: 5 * time.Minute}}
	now := time.UnixMilli(1_000_000_000)
	for _, tc := range []struct {
		ahead  time.Duration
		future bool
	}{{0, false}, {5 * time.Minute, false}, {5*time.Minute + time.Millisecond, true}, {24 * time.Hour, true}} {
		var s TableStatus
		ns.fillMarker(&s, Marker{DeletedAtMs: now.Add(tc.ahead).UnixMilli(), HasTTL: true}, time.Time{}, now)
		require.Equal(t, tc.future, s.FutureDated, "ahead=%s", tc.ahead)
		// Even far past purge_after, a future-dated marker stays not due.
		if tc.future {
			require.False(t, s.Due(now.Add(365*24*time.Hour)))
			require.Contains(t, s.Problem, "in the future")
		}
	}
}
