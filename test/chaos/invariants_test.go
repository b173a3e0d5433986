package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// markerState says what became of a table's marker.
type markerState string

const (
	markerAbsent   markerState = "absent"
	markerOriginal markerState = "original"
	markerOther    markerState = "other" // another marker: dropped again
)

// tableState is one table of a snapshot compared with the fixture.
type tableState struct {
	t      *table
	marker markerState
	// present, missing and changed are data keys of the fixture; extra are
	// keys under the table dir the fixture does not know.
	present, missing, changed, extra []string
	manifestsLeft                    int
	otherDeleted                     int // non-manifest keys missing
	holdPresent                      bool
}

func (s tableState) intact() bool { return len(s.missing) == 0 && len(s.changed) == 0 }
func (s tableState) gone() bool   { return len(s.present) == 0 && len(s.extra) == 0 }
func (s tableState) partial() bool {
	return !s.intact() && !s.gone()
}

func (s tableState) String() string {
	return fmt.Sprintf("%s (%s): marker %s, %d present, %d missing, %d changed, %d extra, %d manifests left",
		s.t.name, s.t.kind, s.marker, len(s.present), len(s.missing), len(s.changed), len(s.extra), s.manifestsLeft)
}

// isManifestKey mirrors the purge order's first group: everything under
// _versions/ and tree/<branch>/_versions/.
func isManifestKey(tableDir, key string) bool {
	rel := strings.TrimPrefix(key, tableDir)
	return strings.HasPrefix(rel, "_versions/") || strings.HasPrefix(rel, "tree/") && strings.Contains(rel, "/_versions/")
}

// stateOf compares snap with the fixture's view of one table.
func stateOf(tb *table, snap snapshot) tableState {
	s := tableState{t: tb}
	dir := lifecycle.TableDir(tb.name)
	for k, body := range tb.files {
		got, ok := snap[k]
		switch {
		case !ok:
			s.missing = append(s.missing, k)
			if !isManifestKey(dir, k) {
				s.otherDeleted++
			}
		case got != sum(body):
			s.changed = append(s.changed, k)
		default:
			s.present = append(s.present, k)
			if isManifestKey(dir, k) {
				s.manifestsLeft++
			}
		}
	}
	for k := range snap {
		if strings.HasPrefix(k, dir) {
			if _, known := tb.files[k]; !known {
				s.extra = append(s.extra, k)
			}
		}
	}
	switch m, ok := snap[lifecycle.MarkerKey(tb.name)]; {
	case !ok:
		s.marker = markerAbsent
	case tb.marker != nil && m == sum(tb.marker):
		s.marker = markerOriginal
	default:
		s.marker = markerOther
	}
	_, s.holdPresent = snap[lifecycle.HoldKey(tb.name)]
	for _, l := range [][]string{s.present, s.missing, s.changed, s.extra} {
		slices.Sort(l)
	}
	return s
}

// checkSafe asserts what must hold at every instant, also right after a
// SIGKILL or during a fault storm (where is names the moment for the
// failure message, with its seed):
//   - no byte of any object ever changes, nothing appears inside a table,
//     and nothing but leases appears beside the tables;
//   - bystander objects (not tables) are untouched;
//   - a table that may not be purged (live, not due, invalid, held, fenced)
//     keeps every object, its marker and its hold;
//   - a purgeable table without its marker is fully gone; a partly deleted
//     one still has its marker (the marker goes last);
//   - manifests go first: once any other file of a table is deleted, none of
//     its manifests is left.
func checkSafe(t testing.TB, f *fixture, snap snapshot, where string) {
	t.Helper()
	for k, body := range f.bystander {
		require.Equal(t, sum(body), snap[k], "%s: bystander %s changed or deleted", where, k)
	}
	known := f.expected()
	for k := range snap {
		_, ok := known[k]
		require.True(t, ok || strings.HasSuffix(k, lifecycle.LockSuffix) || f.inTable(k),
			"%s: reaper wrote %s, which is no lease and belongs to no table", where, k)
	}
	for _, tb := range f.tables {
		s := stateOf(tb, snap)
		require.Empty(t, s.changed, "%s: bytes changed: %s", where, s)
		require.Empty(t, s.extra, "%s: unknown objects appeared: %s", where, s)
		if !tb.kind.purgeable() {
			require.True(t, s.intact(), "%s: a table that may not be purged lost data: %s; missing %v", where, s, s.missing)
			wantMarker := markerOriginal
			if tb.marker == nil {
				wantMarker = markerAbsent
			}
			require.Equal(t, wantMarker, s.marker, "%s: marker of %s", where, s)
			require.Equal(t, tb.hold != nil, s.holdPresent, "%s: hold of %s", where, s)
			continue
		}
		if s.marker == markerAbsent {
			require.True(t, s.gone(), "%s: PARTLY DELETED WITHOUT ITS MARKER: %s; left %v", where, s, s.present)
		}
		if s.partial() && s.otherDeleted > 0 {
			require.Zero(t, s.manifestsLeft, "%s: data deleted before the manifests: %s", where, s)
		}
	}
}

// inTable reports whether key lies inside a fixture table's directory
// (stateOf judges those).
func (f *fixture) inTable(key string) bool {
	for _, tb := range f.tables {
		if strings.HasPrefix(key, lifecycle.TableDir(tb.name)) {
			return true
		}
	}
	return false
}

// checkConverged asserts the end state of a suite after passes without
// faults: every purgeable table is gone with its marker, everything else is
// as written (checkSafe), and no lease is left past its expiry.
func checkConverged(t testing.TB, b *backend, f *fixture, snap snapshot, where string) {
	t.Helper()
	checkSafe(t, f, snap, where)
	for _, tb := range f.tables {
		if tb.kind.purgeable() {
			s := stateOf(tb, snap)
			require.True(t, s.gone() && s.marker == markerAbsent, "%s: due table not purged: %s", where, s)
		}
	}
	stale := staleLeases(t, b, time.Now())
	require.Empty(t, stale, "%s: leases left past their expiry after convergence", where)
}

// leases reads every <name>.reaper-lock at the root.
func leases(t testing.TB, b *backend) map[string]lock.Info {
	t.Helper()
	ctx := context.Background()
	out := map[string]lock.Info{}
	var keys []string
	err := b.raw.List(ctx, "", func(p objstore.Page) error {
		for _, o := range p.Objects {
			if strings.HasSuffix(o.Key, lifecycle.LockSuffix) {
				keys = append(keys, o.Key)
			}
		}
		return nil
	})
	require.NoError(t, err)
	for _, k := range keys {
		info, err := lock.Read(ctx, b.raw, k)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // released meanwhile
		}
		require.NoError(t, err, "lease %s must always parse", k)
		out[k] = info
	}
	return out
}

// staleLeases names leases whose expiry has passed at now.
func staleLeases(t testing.TB, b *backend, now time.Time) []string {
	t.Helper()
	var out []string
	for k, info := range leases(t, b) {
		if at := info.TakeoverAt(info.Modified, 0); !now.Before(at) {
			out = append(out, fmt.Sprintf("%s (owner %s, generation %d, up for takeover %s ago)", k, info.Owner, info.Generation, now.Sub(at).Round(time.Millisecond)))
		}
	}
	slices.Sort(out)
	return out
}

// purgedAll reports whether every purgeable table and its marker are gone.
func purgedAll(f *fixture, snap snapshot) (bool, string) {
	for _, tb := range f.tables {
		if !tb.kind.purgeable() {
			continue
		}
		if s := stateOf(tb, snap); !s.gone() || s.marker != markerAbsent {
			return false, s.String()
		}
	}
	return true, ""
}

// converge runs fault-free passes (args) until every purgeable table is gone
// and no lease is left, checking checkSafe after each pass, then asserts
// checkConverged. A lease left by a killed or failed run blocks its table
// until it expires; the loop then waits for that expiry (a known instant
// read from the lease) before the next pass. A lease that expired before a
// pass started and survived it is a leak: nothing would ever remove it. It
// returns the last pass and how many passes it took.
func converge(t testing.TB, b *backend, f *fixture, args []string, where string) (result, int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for runs := 1; ; runs++ {
		passStart := time.Now()
		r := reaper(t, args...)
		snap := take(t, b)
		checkSafe(t, f, snap, fmt.Sprintf("%s, converging pass %d", where, runs))
		done, why := purgedAll(f, snap)
		ls := leases(t, b)
		if done && len(ls) == 0 {
			checkConverged(t, b, f, snap, where+", converged")
			return r, runs
		}
		var latest time.Time
		for _, info := range ls {
			if info.ExpiresAt.After(latest) {
				latest = info.ExpiresAt
			}
		}
		if done && latest.Before(passStart) {
			t.Fatalf("%s: pass %d started after every lease had expired, yet left %v: a lease left behind with no table is never removed\nlast pass: %s",
				where, runs, staleLeases(t, b, time.Now()), r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not converged after %d passes: %s; leases %v\nlast pass: %s", where, runs, why, sortedKeys(ls), r)
		}
		if wait := time.Until(latest); wait > 0 {
			time.Sleep(min(wait+20*time.Millisecond, time.Until(deadline)))
		}
	}
}

// failedOnlyInvalid asserts that a fault-free pass failed nothing but the
// tables with invalid markers.
func failedOnlyInvalid(t testing.TB, f *fixture, r result, where string) {
	t.Helper()
	for _, e := range report(t, r).Failed {
		tb := f.byName[e.Name]
		require.NotNil(t, tb, "%s: failure outside the fixture: %+v\n%s", where, e, r)
		require.Equal(t, kindInvalid, tb.kind, "%s: %s failed: %s\n%s", where, e.Name, e.Error, r)
	}
}
