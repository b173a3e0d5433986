package interop

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
)

// The steps of the scenario, in order; each builds on the ones before.

// createRoot: LanceDB writes every table; the root has what a real one has.
func (s *scenario) createRoot(t *testing.T) {
	ops := setupOps()
	for _, name := range allTables {
		ops = append(ops, opSnapshot(name))
	}
	ops = append(ops, opNames())
	res := s.db.run(t, ops...)
	s.before = map[string]snapshot{}
	for i, name := range allTables {
		s.before[name] = decode[snapshot](t, res[len(setupOps())+i])
	}
	names := decode[[]string](t, res[len(res)-1])
	assert.ElementsMatch(t, allTables, names, "LanceDB table names after setup")

	ev := s.before[tEvents]
	assert.EqualValues(t, 7, ev.Version, "%s version", tEvents)
	assert.Len(t, ev.Versions, 7, "%s versions", tEvents)
	// 700 ids, minus 0..49, minus ids ending in 3 among 50..699.
	assert.EqualValues(t, 700-50-65, ev.Rows, "%s rows", tEvents)
	assert.Equal(t, map[string]int64{"release-1": 3}, ev.Tags, "%s tags", tEvents)
	if assert.Contains(t, ev.Branches, "backfill", "%s branches", tEvents) {
		assert.Equal(t, ev.Rows+30, ev.Branches["backfill"].Rows, "%s branch rows", tEvents)
	}

	// The store holds what the purge must handle: deletion files, index
	// files, many manifests, transactions.
	for _, tc := range []struct {
		table string
		dirs  []string
	}{
		{tEvents, []string{"_deletions/", "_indices/", "_transactions/", "data/", "_refs/tags/", "_refs/branches/", "tree/backfill/_versions/"}},
		{tProfiles, []string{"_indices/"}},
		{tVectors, []string{"_indices/", "_deletions/"}},
		{tOldLogs, []string{"_deletions/", "_indices/", "_refs/tags/", "tree/exp/_versions/", "tree/exp/data/"}},
		{tScratch, []string{"_indices/"}},
		{tAged, []string{"_deletions/", "_indices/"}},
	} {
		keys := s.b.list(t, tc.table+".lance/")
		for _, d := range tc.dirs {
			assert.True(t, hasKeyPrefix(keys, tc.table+".lance/"+d), "%s has no %s object; keys: %v", tc.table, d, slices.Sorted(maps.Keys(keys)))
		}
		manifests := 0
		for k := range keys {
			if strings.HasPrefix(k, tc.table+".lance/_versions/") && strings.HasSuffix(k, ".manifest") {
				manifests++
			}
		}
		assert.EqualValues(t, s.before[tc.table].Version, manifests, "%s manifests", tc.table)
	}
}

// placeMarkers writes the markers reaper did not write: one in the form
// Lance writes (other key order, whitespace, an unknown key) and three bad
// ones next to real tables. The Lance-form marker is dated now by this
// host's clock, as Lance dates its own, with a one-millisecond TTL: nothing
// can back-date it (reaper judges due-ness by the marker's LastModified too,
// stamped by the store, and reads ctime on a local disk), so the table is due
// once the store's clock has passed it (statusBeforePurge waits for that),
// and its files, written by createRoot, predate the drop.
func (s *scenario) placeMarkers(t *testing.T) {
	s.b.put(t, tAged+".deleted", fmt.Appendf(nil, "{\n  \"ttl_ms\": %d,\n  \"deleted_at_ms\": %d,\n  \"by\": \"lance\"\n}\n", agedTTL.Milliseconds(), time.Now().UnixMilli()))

	s.b.put(t, tBadGarbage+".deleted", []byte("this is not a marker {"))
	s.b.put(t, tBadNegative+".deleted", []byte(`{"deleted_at_ms": -1767225600000, "ttl_ms": 1000}`))
	future := time.Now().Add(48 * time.Hour).UnixMilli()
	s.b.put(t, tBadFuture+".deleted", fmt.Appendf(nil, `{"deleted_at_ms":%d,"ttl_ms":1}`, future))
}

// agedTTL is the TTL of tAged's Lance-form marker.
const agedTTL = time.Millisecond

var compactMarker = regexp.MustCompile(`^\{"deleted_at_ms":[0-9]+,"ttl_ms":([0-9]+)\}$`)

// dropWithCLI soft-deletes four tables with `reaper drop`, which dates the
// markers by the store's clock: no earlier than the store's clock read
// before the drop (on S3 a Date header, which may trail this host's clock by
// up to two seconds), and not after this host's clock plus S3's one-second
// resolution.
func (s *scenario) dropWithCLI(t *testing.T) {
	start := s.b.storeNow(t)
	out, code := s.cli.run(t, "drop", "--ttl", "1s", tOldLogs, tConflict, tOverwritten)
	require.Equal(t, 0, code, "reaper drop: %s", out)
	out, code = s.cli.run(t, "drop", "--ttl", "30d", tArchive)
	require.Equal(t, 0, code, "reaper drop: %s", out)

	ttls := map[string]time.Duration{tOldLogs: time.Second, tConflict: time.Second, tOverwritten: time.Second, tArchive: 30 * 24 * time.Hour}
	for name, ttl := range ttls {
		body := s.b.get(t, name+".deleted")
		m := compactMarker.FindSubmatch(body)
		require.NotNil(t, m, "%s.deleted = %q, want the compact form", name, body)
		assert.Equal(t, fmt.Sprint(ttl.Milliseconds()), string(m[1]), "%s.deleted ttl_ms", name)
		st := s.status(t, name)
		assert.Equal(t, reaper.StateSoftDeleted, st.State, name)
		assert.WithinRange(t, st.DeletedAt, start, time.Now().Add(time.Second), "%s deleted_at", name)
	}
}

// dropWithGo soft-deletes three tables through the public package.
func (s *scenario) dropWithGo(t *testing.T) {
	ctx := ctxT(t)
	for _, n := range []string{tScratch, tHardDropped} {
		m, err := s.ns.Drop(ctx, n, time.Second)
		require.NoError(t, err)
		assert.EqualValues(t, 1000, m.TTLMs)
	}
	m, err := s.ns.Drop(ctx, tStaging, 0)
	require.NoError(t, err)
	assert.EqualValues(t, reaper.DefaultTTL.Milliseconds(), m.TTLMs)

	// A second drop keeps the marker byte-identical.
	body := s.b.get(t, tStaging+".deleted")
	_, err = s.ns.Drop(ctx, tStaging, time.Second)
	require.ErrorIs(t, err, reaper.ErrAlreadyDeleted)
	assert.Equal(t, string(body), string(s.b.get(t, tStaging+".deleted")))
}

// writeAfterDrop: LanceDB processes that ignore reaper's lock write into
// dropped tables: one adds rows, one overwrites the table (a revive by
// overwrite), one hard-drops a table with LanceDB's own dropTable. The writes
// land in a later second than the markers (the fence compares whole
// seconds): the test waits for the clock to pass the markers' second, then
// starts LanceDB.
func (s *scenario) writeAfterDrop(t *testing.T) {
	for _, n := range conflicts {
		marker := s.b.list(t, n+".deleted")[n+".deleted"]
		require.False(t, marker.Modified.IsZero(), "no %s.deleted", n)
		waitSecondAfter(t, marker.Modified)
		waitSecondAfter(t, s.status(t, n).DeletedAt)
	}

	res := s.db.run(t,
		opAdd(tConflict, conflictFrom, conflictTo),
		opOverwrite(tOverwritten, "plain", overwriteFrom, overwriteTo),
		opDrop(tHardDropped),
		opSnapshot(tConflict),
		opSnapshot(tOverwritten),
	)
	added, was := decode[snapshot](t, res[3]), s.before[tConflict]
	assert.Equal(t, was.Rows+int64(conflictTo-conflictFrom), added.Rows, "%s rows after the write", tConflict)
	assert.Equal(t, was.Version+1, added.Version, "%s version after the write", tConflict)
	s.before[tConflict] = added

	over, was := decode[snapshot](t, res[4]), s.before[tOverwritten]
	assert.EqualValues(t, overwriteTo-overwriteFrom, over.Rows, "%s rows after the overwrite", tOverwritten)
	assert.Equal(t, was.Version+1, over.Version, "%s version after the overwrite", tOverwritten)
	assert.Equal(t, was.Versions, over.Versions[:len(was.Versions)], "%s keeps its history", tOverwritten)
	s.before[tOverwritten] = over

	assert.Empty(t, s.b.list(t, tHardDropped+".lance/"), "LanceDB's dropTable left data of %s", tHardDropped)
	assert.NotNil(t, s.b.get(t, tHardDropped+".deleted"), "LanceDB's dropTable removed the marker of %s", tHardDropped)
}

// statusBeforePurge: once the short TTLs have passed by the store's clock,
// status (CLI) and the plan (Go package) say what the purge will do, and why
// for bad markers. Both read the store's clock, each its own lower bound of
// it, so the test polls until both see every short-TTL table due.
func (s *scenario) statusBeforePurge(t *testing.T) {
	dueNames := sorted(append([]string{tHardDropped}, append(purged, conflicts...)...))
	ctx := ctxT(t)
	deadline := time.Now().Add(30 * time.Second)
	var st map[string]statusJSON
	for {
		due, err := s.ns.ListPurgeable(ctx, time.Now())
		require.NoError(t, err)
		got := namesOf(due)
		var cliDue []string
		if slices.Equal(got, dueNames) {
			st = s.cli.status(t)
			for n, e := range st {
				if e.Due {
					cliDue = append(cliDue, n)
				}
			}
			slices.Sort(cliDue)
			if slices.Equal(cliDue, dueNames) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ListPurgeable = %v, reaper status due = %v, want %v", got, cliDue, dueNames)
		}
		time.Sleep(50 * time.Millisecond) // polling the store's clock past the TTLs, not synchronizing
	}
	// Two processes' lower bounds of an S3 store's clock may differ by a
	// second (versitygw caches its Date header for up to a second, and a
	// reading may be lifted by a fresher Last-Modified), so the purge's own
	// process could still see a table not due. The test servers run on this
	// host: its clock is theirs, and a margin past the latest due time
	// settles it.
	var latest time.Time
	for _, n := range dueNames {
		if pa := s.status(t, n).PurgeAfter; pa.After(latest) {
			latest = pa
		}
	}
	for time.Now().Before(latest.Add(2 * time.Second)) {
		time.Sleep(50 * time.Millisecond) // polling the clock, not synchronizing
	}
	plan, err := s.ns.PlanPurge(ctx, time.Now())
	require.NoError(t, err)
	assert.Equal(t, sorted(badMarkers), namesOf(plan.Invalid), "plan: invalid")
	assert.Equal(t, []string{tArchive, tStaging}, namesOf(plan.NotDue), "plan: not due")
	assert.Equal(t, sorted(live), namesOf(plan.Live), "plan: live")

	require.ElementsMatch(t, allTables, slices.Collect(maps.Keys(st)), "reaper status names")
	for _, n := range live {
		assert.Equal(t, "exists", st[n].State, n)
	}
	for _, n := range dueNames {
		want := "soft_deleted"
		if n == tHardDropped {
			want = "orphan_marker"
		}
		assert.Equal(t, want, st[n].State, n)
		assert.True(t, st[n].Due, "%s due", n)
		if slices.Contains(conflicts, n) {
			// LanceDB wrote to it after its drop: status says so, and what
			// to do, before a purge refuses it.
			if assert.NotNil(t, st[n].Problem, "%s problem", n) {
				assert.Contains(t, *st[n].Problem, "written after its drop", n)
				assert.Contains(t, *st[n].Problem, "reaper revive", n)
			}
			continue
		}
		assert.Nil(t, st[n].Problem, "%s problem", n)
	}
	aged := st[tAged]
	if assert.NotNil(t, aged.TTLMs) && assert.NotNil(t, aged.DeletedAtMs) {
		wantAt, wantTTL := s.markerFields(t, tAged)
		assert.Equal(t, wantTTL, *aged.TTLMs, "%s ttl_ms from the Lance-form marker", tAged)
		assert.Equal(t, wantAt, *aged.DeletedAtMs, "%s deleted_at_ms from the Lance-form marker", tAged)
	}
	for _, n := range []string{tArchive, tStaging} {
		assert.Equal(t, "soft_deleted", st[n].State, n)
		assert.False(t, st[n].Due, "%s due", n)
		if assert.NotNil(t, st[n].PurgeAfterMs, n) {
			assert.Greater(t, *st[n].PurgeAfterMs, time.Now().Add(24*time.Hour).UnixMilli(), "%s purge_after_ms", n)
		}
	}
	for _, n := range []string{tBadGarbage, tBadNegative} {
		assert.Equal(t, "invalid_marker", st[n].State, n)
		assert.False(t, st[n].Due, "%s due", n)
		if assert.NotNil(t, st[n].Problem, "%s problem", n) {
			assert.NotEmpty(t, *st[n].Problem, "%s problem", n)
		}
	}
	assert.Contains(t, *st[tBadNegative].Problem, "deleted_at_ms")
	fut := st[tBadFuture]
	assert.False(t, fut.Due, "%s due", tBadFuture)
	if assert.NotNil(t, fut.Problem, "%s problem", tBadFuture) {
		assert.Contains(t, *fut.Problem, "future")
	}
}

// dryRun: the dry run reports what the purge will reclaim and deletes
// nothing.
func (s *scenario) dryRun(t *testing.T) {
	whole := s.b.list(t, "")
	p, code := s.cli.purge(t, "--dry-run")
	assert.Equal(t, 1, code, "exit code (the bad markers fail)")
	assert.True(t, p.DryRun)
	got := map[string][2]int64{}
	for _, e := range p.Purged {
		got[e.Name] = [2]int64{e.Objects, e.Bytes}
	}
	assert.Equal(t, s.expectedReclaim(t), got, "dry run: objects and bytes per table")
	assert.Equal(t, whole, s.b.list(t, ""), "the dry run changed the store")
}

// purgePass: one pass purges exactly the due tables and the orphan marker,
// skips the conflicts and the not-due tables, fails the bad markers, and touches nothing else.
func (s *scenario) purgePass(t *testing.T) {
	s.files = map[string]map[string]object{}
	s.markers = map[string][]byte{}
	for _, n := range allTables {
		s.files[n] = s.b.list(t, n+".lance/")
		s.markers[n] = s.b.get(t, n+".deleted")
	}
	reclaim := s.expectedReclaim(t)

	p, code := s.cli.purge(t)
	assert.Equal(t, 1, code, "exit code (the bad markers fail)")
	assert.False(t, p.DryRun)

	got := map[string][2]int64{}
	for _, e := range p.Purged {
		got[e.Name] = [2]int64{e.Objects, e.Bytes}
	}
	assert.Equal(t, reclaim, got, "purged: objects and bytes per table")

	skipped := map[string]string{}
	for _, e := range p.Skipped {
		skipped[e.Name] = e.Reason
	}
	assert.ElementsMatch(t, append([]string{tArchive, tStaging}, conflicts...), slices.Collect(maps.Keys(skipped)), "skipped: %v", skipped)
	for _, n := range conflicts {
		assert.True(t, strings.HasPrefix(skipped[n], "conflict"), "%s skipped for %q, want a conflict", n, skipped[n])
	}
	for _, n := range []string{tArchive, tStaging} {
		assert.True(t, strings.HasPrefix(skipped[n], "not due"), "%s skipped for %q, want not due", n, skipped[n])
	}

	failed := map[string]string{}
	for _, e := range p.Failed {
		failed[e.Name] = e.Error
	}
	assert.ElementsMatch(t, badMarkers, slices.Collect(maps.Keys(failed)), "failed: %v", failed)
	assert.Contains(t, failed[tBadGarbage], tBadGarbage+".deleted")
	assert.Contains(t, failed[tBadNegative], tBadNegative+".deleted")
	assert.Contains(t, failed[tBadFuture], "future")

	// The store: nothing of a purged table is left, not even an empty
	// directory (LanceDB would list it), a marker or a lease.
	gone := append([]string{tHardDropped}, purged...)
	for _, n := range gone {
		assert.Empty(t, s.b.list(t, n+"."), "objects left of purged %s", n)
	}
	for _, e := range s.b.rootEntries(t) {
		for _, n := range gone {
			assert.False(t, strings.HasPrefix(e, n+"."), "root entry %q left of purged %s", e, n)
		}
		assert.False(t, strings.HasSuffix(e, ".reaper-lock"), "lease %q left behind", e)
	}
	// Every other table is byte for byte what it was, marker included.
	for _, n := range survivors {
		assert.Equal(t, s.files[n], s.b.list(t, n+".lance/"), "%s.lance/ changed", n)
		assert.Equal(t, string(s.markers[n]), string(s.b.get(t, n+".deleted")), "%s.deleted changed", n)
	}
	st := s.cli.status(t, gone...)
	for _, n := range gone {
		assert.Equal(t, "not_found", st[n].State, "%s after the purge", n)
	}
}

// revive: one not-due table through the Go package, one through the CLI;
// only the markers go.
func (s *scenario) revive(t *testing.T) {
	require.NoError(t, s.ns.Revive(ctxT(t), tArchive))
	out, code := s.cli.run(t, "revive", tStaging)
	require.Equal(t, 0, code, "reaper revive: %s", out)
	for _, n := range []string{tArchive, tStaging} {
		assert.Nil(t, s.b.get(t, n+".deleted"), "%s.deleted after revive", n)
		assert.Equal(t, s.files[n], s.b.list(t, n+".lance/"), "%s.lance/ changed by revive", n)
		assert.Equal(t, reaper.StateExists, s.status(t, n).State, n)
	}
}

// lanceViewAfterPurge: LanceDB lists exactly the survivors, reads them as
// before (versions, indices, rows), cannot open the purged names and creates
// them fresh at version 1.
func (s *scenario) lanceViewAfterPurge(t *testing.T) {
	ops := []op{opNames()}
	for _, n := range survivors {
		ops = append(ops, opSnapshot(n))
	}
	for _, n := range purged {
		ops = append(ops, opOpen(n))
	}
	for _, n := range purged {
		ops = append(ops, opCreate(n, "plain", 0, 10), opSnapshot(n))
	}
	res := s.db.run(t, ops...)
	assert.ElementsMatch(t, survivors, decode[[]string](t, res[0]), "LanceDB table names after the purge")
	res = res[1:]
	for i, n := range survivors {
		assert.Equal(t, s.before[n], decode[snapshot](t, res[i]), "LanceDB's view of %s after the purge", n)
	}
	res = res[len(survivors):]
	for i, n := range purged {
		o := decode[openResult](t, res[i])
		assert.False(t, o.OK, "LanceDB opened purged %s", n)
		assert.Contains(t, o.Error, "not found", "opening purged %s", n)
	}
	res = res[len(purged):]
	for i, n := range purged {
		created := decode[versionResult](t, res[2*i])
		snap := decode[snapshot](t, res[2*i+1])
		assert.EqualValues(t, 1, created.Version, "%s created again", n)
		assert.EqualValues(t, 10, snap.Rows, "%s created again", n)
		assert.Len(t, snap.Versions, 1, "%s created again: versions", n)
		assert.Empty(t, snap.Indices, "%s created again: indices", n)
		assert.Empty(t, snap.Tags, "%s created again: tags", n)
		assert.Empty(t, snap.Branches, "%s created again: branches", n)
	}
	st := s.cli.status(t, purged...)
	for _, n := range purged {
		assert.Equal(t, "exists", st[n].State, "%s created again", n)
	}
	st = s.cli.status(t, conflicts...)
	for _, n := range conflicts {
		assert.Equal(t, "soft_deleted", st[n].State, "%s keeps its marker for an operator", n)
	}
}
