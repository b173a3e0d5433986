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

// commitState says what a table's purge commit <name>.reaper-purge is.
type commitState string

const (
	commitAbsent     commitState = "absent"
	commitMatches    commitState = "names the marker" // names the marker present now
	commitStale      commitState = "names another"    // names other bytes, or there is no marker
	commitUnreadable commitState = "does not parse"   // never written by reaper
)

// tableState is one table of a snapshot compared with the fixture.
type tableState struct {
	t      *table
	marker markerState
	commit commitState
	// present, missing and changed are data keys of the fixture; extra are
	// keys under the table dir the fixture does not know.
	present, missing, changed, extra []string
	manifestsLeft                    int
	otherDeleted                     int // non-manifest keys missing
	holdPresent                      bool
	// dirs counts directories left of the table (local roots), the table's
	// own <name>.lance/ included.
	dirs int
}

func (s tableState) intact() bool { return len(s.missing) == 0 && len(s.changed) == 0 }
func (s tableState) gone() bool   { return len(s.present) == 0 && len(s.extra) == 0 }

// fullyGone: no object and (local) no directory of the table is left.
func (s tableState) fullyGone() bool { return s.gone() && s.dirs == 0 }
func (s tableState) partial() bool {
	return !s.intact() && !s.gone()
}

func (s tableState) String() string {
	return fmt.Sprintf("%s (%s): marker %s, commit %s, %d present, %d missing, %d changed, %d extra, %d manifests left, %d dirs left",
		s.t.name, s.t.kind, s.marker, s.commit, len(s.present), len(s.missing), len(s.changed), len(s.extra), s.manifestsLeft, s.dirs)
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
	for k, v := range snap {
		if !strings.HasPrefix(k, dir) {
			continue
		}
		if v == dirValue {
			s.dirs++
			continue
		}
		if _, known := tb.files[k]; !known {
			s.extra = append(s.extra, k)
		}
	}
	m, hasMarker := snap[lifecycle.MarkerKey(tb.name)]
	switch {
	case !hasMarker:
		s.marker = markerAbsent
	case tb.marker != nil && m == sum(tb.marker):
		s.marker = markerOriginal
	default:
		s.marker = markerOther
	}
	switch c, ok := snap[lifecycle.CommitKey(tb.name)]; {
	case !ok:
		s.commit = commitAbsent
	case hasMarker && c == "commit:"+m:
		s.commit = commitMatches
	case strings.HasPrefix(c, "commit-unreadable:"):
		s.commit = commitUnreadable
	default:
		s.commit = commitStale
	}
	_, s.holdPresent = snap[lifecycle.HoldKey(tb.name)]
	for _, l := range [][]string{s.present, s.missing, s.changed, s.extra} {
		slices.Sort(l)
	}
	return s
}

// checkSafe asserts what must hold at every instant, also right after a
// SIGKILL, while a purge is stopped (SIGSTOP) or during a fault storm
// (where names the moment for the failure message, with its seed):
//   - no byte of any object ever changes, nothing appears inside a table,
//     and nothing but leases and purge commits appears beside the tables;
//   - nothing outside the root is touched (the sentinels in its parent, the
//     folder a link table points at), nor the <name>.lance of a link table,
//     nor any bystander object of the root that is no table;
//   - a table that may not be purged (live, revived, not due, invalid,
//     held, fenced, link) keeps every object, its marker and its hold, and
//     never gets a purge commit;
//   - every purgeable table is whole with its marker, whole without it,
//     committed and finishable (its marker AND a purge commit naming that
//     marker present, part of the data gone), or fully gone (directories
//     included): a commit never outlives its marker, and a table missing
//     any object, or left as empty directories, has its commit;
//   - manifests go first: once any other file of a table is deleted, none of
//     its manifests is left.
func checkSafe(t testing.TB, f *fixture, snap snapshot, where string) {
	t.Helper()
	for k, body := range f.bystander {
		require.Equal(t, sum(body), snap[k], "%s: bystander %s changed or deleted", where, k)
	}
	for k, v := range f.fixed {
		got, ok := snap[k]
		require.True(t, ok, "%s: %s is gone: reaper deleted something outside the root or entered a link", where, k)
		require.Equal(t, v, got, "%s: %s changed: reaper wrote outside the root or through a link", where, k)
	}
	known := f.expected()
	for k, v := range snap {
		if _, ok := known[k]; ok {
			continue
		}
		if v == dirValue {
			require.True(t, f.inTable(k) || f.underKnown(k), "%s: a directory %s appeared outside every table", where, k)
			continue
		}
		atRoot := !strings.Contains(k, "/")
		lease := atRoot && strings.HasSuffix(k, lifecycle.LockSuffix)
		name, isCommit := strings.CutSuffix(k, lifecycle.CommitSuffix)
		commit := atRoot && isCommit && f.byName[name] != nil // judged per table below
		require.True(t, lease || commit || f.inTable(k),
			"%s: reaper wrote %s, which is no lease, no commit of a table, and belongs to no table", where, k)
	}
	for _, tb := range f.tables {
		checkTable(t, tb, stateOf(tb, snap), where)
	}
}

// checkTable asserts the per-table invariants of checkSafe.
func checkTable(t testing.TB, tb *table, s tableState, where string) {
	t.Helper()
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
		require.Equal(t, commitAbsent, s.commit, "%s: a purge committed on a table that may not be purged: %s", where, s)
		return
	}
	require.NotEqual(t, markerOther, s.marker, "%s: the marker was rewritten: %s", where, s)
	switch s.commit {
	case commitAbsent, commitMatches:
	default:
		require.Failf(t, "purge commit", "%s: A PURGE COMMIT THAT NAMES NO PRESENT MARKER (%s): %s", where, s.commit, s)
	}
	if s.marker == markerAbsent {
		require.True(t, s.fullyGone(), "%s: PARTLY DELETED WITHOUT ITS MARKER: %s; left %v", where, s, s.present)
	}
	if !tb.legacy && (len(s.missing) > 0 && !s.gone() || s.gone() && s.dirs > 0 && len(tb.files) > 0) {
		require.Equal(t, commitMatches, s.commit, "%s: PARTLY DELETED WITHOUT A PURGE COMMIT: %s", where, s)
	}
	if len(s.missing) > 0 && !s.gone() && s.otherDeleted > 0 {
		require.Zero(t, s.manifestsLeft, "%s: data deleted before the manifests: %s", where, s)
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

// underKnown reports whether the directory key dir holds an object the
// fixture wrote (a bystander's or a sentinel's folder).
func (f *fixture) underKnown(dir string) bool {
	for k := range f.bystander {
		if strings.HasPrefix(k, dir) {
			return true
		}
	}
	for k := range f.fixed {
		if strings.HasPrefix(k, dir) {
			return true
		}
	}
	return false
}

// checkConverged asserts the end state of a suite after passes without
// faults: every purgeable table is gone with its marker and its commit,
// everything else is as written (checkSafe), and no lease is left that
// could be taken over by the store's clock.
func checkConverged(t testing.TB, b *backend, f *fixture, snap snapshot, skew time.Duration, where string) {
	t.Helper()
	checkSafe(t, f, snap, where)
	for _, tb := range f.tables {
		if tb.kind.purgeable() {
			s := stateOf(tb, snap)
			require.True(t, s.fullyGone() && s.marker == markerAbsent && s.commit == commitAbsent, "%s: due table not purged: %s", where, s)
		}
	}
	stale := staleLeases(t, b, skew)
	require.Empty(t, stale, "%s: leases left past their takeover time after convergence", where)
}

// leases reads every <name>.reaper-lock at the root, with its LastModified.
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

// takeoverAt is the latest store time at which any of ls may be taken
// over: LastModified + ttl + 1s + skew (zero when ls is empty).
func takeoverAt(ls map[string]lock.Info, skew time.Duration) time.Time {
	var latest time.Time
	for _, info := range ls {
		if at := info.TakeoverAt(info.Modified, skew); at.After(latest) {
			latest = at
		}
	}
	return latest
}

// waitTakeover waits until the store's clock allows a takeover of every
// lease at the root (a known instant of a real clock, read from the
// leases; bounded).
func waitTakeover(t testing.TB, b *backend, skew time.Duration, what string) {
	t.Helper()
	if at := takeoverAt(leases(t, b), skew); !at.IsZero() {
		b.waitStore(t, at, what)
	}
}

// staleLeases names leases the store's clock allows to be taken over.
func staleLeases(t testing.TB, b *backend, skew time.Duration) []string {
	t.Helper()
	ls := leases(t, b)
	if len(ls) == 0 {
		return nil
	}
	now := b.storeNow(t)
	var out []string
	for k, info := range ls {
		if at := info.TakeoverAt(info.Modified, skew); !now.Before(at) {
			out = append(out, fmt.Sprintf("%s (owner %s, generation %d, up for takeover %s ago)", k, info.Owner, info.Generation, now.Sub(at).Round(time.Millisecond)))
		}
	}
	slices.Sort(out)
	return out
}

// purgedAll reports whether every purgeable table, its marker and its
// commit are gone.
func purgedAll(f *fixture, snap snapshot) (bool, string) {
	for _, tb := range f.tables {
		if !tb.kind.purgeable() {
			continue
		}
		if s := stateOf(tb, snap); !s.fullyGone() || s.marker != markerAbsent || s.commit != commitAbsent {
			return false, s.String()
		}
	}
	return true, ""
}

// converge runs fault-free passes (args) until every purgeable table is gone
// and no lease is left, checking checkSafe after each pass, then asserts
// checkConverged. A lease left by a killed, stopped or failed run blocks its
// table until the store's clock allows a takeover (its LastModified + ttl +
// 1s + skew); the loop then waits for that instant before the next pass. A
// lease that could be taken over before a pass started and survived it is
// a leak: nothing would ever remove it. It returns the last pass and how
// many passes it took.
func converge(t testing.TB, b *backend, f *fixture, args []string, skew time.Duration, where string) (result, int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for runs := 1; ; runs++ {
		passStart := b.storeNow(t)
		r := reaper(t, args...)
		snap := take(t, b)
		checkSafe(t, f, snap, fmt.Sprintf("%s, converging pass %d", where, runs))
		done, why := purgedAll(f, snap)
		ls := leases(t, b)
		if done && len(ls) == 0 {
			checkConverged(t, b, f, snap, skew, where+", converged")
			return r, runs
		}
		latest := takeoverAt(ls, skew)
		if done && !passStart.Before(latest) {
			t.Fatalf("%s: pass %d started after every lease could be taken over, yet left %v: a lease left behind with no table is never removed\nlast pass: %s",
				where, runs, staleLeases(t, b, skew), r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not converged after %d passes: %s; leases %v\nlast pass: %s", where, runs, why, sortedKeys(ls), r)
		}
		if !latest.IsZero() {
			b.waitStore(t, latest, where+": wait for the leases' takeover time")
		}
	}
}

// failedOnlyInvalid asserts that a fault-free pass failed nothing but the
// tables with invalid markers and the link tables (not_a_table).
func failedOnlyInvalid(t testing.TB, f *fixture, r result, where string) {
	t.Helper()
	for _, e := range report(t, r).Failed {
		tb := f.byName[e.Name]
		require.NotNil(t, tb, "%s: failure outside the fixture: %+v\n%s", where, e, r)
		require.Contains(t, []kind{kindInvalid, kindLink}, tb.kind, "%s: %s failed: %s\n%s", where, e.Name, e.Error, r)
	}
}
