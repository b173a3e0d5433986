package worker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// TestBriefListAcrossChunks: a brief list of several chunks sorts by name
// in place and concatenates without losing or reordering a brief.
func TestBriefListAcrossChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var a, b briefList
	var names []string
	for i := range 3*chunkSize + 17 {
		n := fmt.Sprintf("t%06d", r.IntN(1_000_000))
		names = append(names, n)
		if i%3 == 0 {
			b.add(brief{name: n})
		} else {
			a.add(brief{name: n})
		}
	}
	a.concat(&b)
	require.Equal(t, len(names), a.len())
	sortBriefs(&a)
	got := make([]string, a.len())
	for i := range got {
		got[i] = a.at(i).name
	}
	slices.Sort(names)
	require.Equal(t, names, got)
	var empty briefList
	empty.concat(&a)
	require.Equal(t, a.len(), empty.len(), "an empty list takes the other's chunks")
}

// TestBriefKeepsWhatAReportNeeds: a brief gives back the status it was
// made from, but for the marker's LastModified and ETag, for every kind of
// marker (with and without a TTL, a saturated purge time) and state; a
// status it cannot give back is refused.
func TestBriefKeepsWhatAReportNeeds(t *testing.T) {
	const def = 7 * 24 * time.Hour
	mk := func(m lifecycle.Marker, state lifecycle.State, hasData bool, purgeAfter time.Time) lifecycle.TableStatus {
		return lifecycle.TableStatus{Name: "t", State: state, HasData: hasData, Marker: &m, TTL: m.TTL(def),
			DeletedAt: m.DeletedAt(), PurgeAfter: purgeAfter, MarkerModified: time.Now(), MarkerETag: "etag"}
	}
	now := time.Now()
	for _, s := range []lifecycle.TableStatus{
		mk(lifecycle.Marker{DeletedAtMs: now.UnixMilli(), TTLMs: 3600_000, HasTTL: true}, lifecycle.StateSoftDeleted, true, now.Add(time.Hour)),
		mk(lifecycle.Marker{DeletedAtMs: now.UnixMilli()}, lifecycle.StateOrphanMarker, false, now.Add(def+time.Nanosecond)),
		mk(lifecycle.Marker{DeletedAtMs: 1, TTLMs: 1 << 62, HasTTL: true}, lifecycle.StateSoftDeleted, true, lifecycle.Marker{DeletedAtMs: 1, TTLMs: 1 << 62, HasTTL: true}.PurgeAfter(def)),
	} {
		b, ok := briefOf(s, def)
		require.True(t, ok)
		require.Equal(t, asReported(s), asReported(b.status(def)))
		require.True(t, s.PurgeAfter.Equal(b.status(def).PurgeAfter))
	}
	bad := mk(lifecycle.Marker{DeletedAtMs: 1}, lifecycle.StateSoftDeleted, true, now)
	for _, s := range []lifecycle.TableStatus{
		func() lifecycle.TableStatus { s := bad; s.Problem = "stale commit"; return s }(),
		func() lifecycle.TableStatus { s := bad; s.Hold = &lifecycle.Hold{}; return s }(),
		func() lifecycle.TableStatus { s := bad; s.State = lifecycle.StatePartiallyPurged; return s }(),
		func() lifecycle.TableStatus { s := bad; s.TTL = time.Minute; return s }(), // not the marker's: another default
		func() lifecycle.TableStatus { s := bad; s.Marker = nil; return s }(),
	} {
		_, ok := briefOf(s, def)
		require.False(t, ok, "%+v", s)
	}
}
