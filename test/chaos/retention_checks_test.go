package chaos

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// versionRefs are the files one version references, as reaper's reader
// read its manifest.
type versionRefs struct {
	keys, indices []string
}

func (rc *retainChaos) names() []string {
	out := make([]string, len(rc.tables))
	for i, tb := range rc.tables {
		out[i] = tb.name
	}
	return out
}

// check runs between rounds, no reaper process running: LanceDB opens every
// version it lists, each reads the rows it read when the writer made it,
// and the newest is listed. Then each table is read with reaper's reader,
// to keep the references of every version for the leak check.
func (rc *retainChaos) check(where string) {
	t := rc.t
	vts, err := rc.w.verify(rc.b.uri, rc.names())
	require.NoError(t, err, where)
	require.Len(t, vts, len(rc.tables))
	for i, vt := range vts {
		checkVersions(t, rc.tables[i], vt, where)
	}
	for _, tb := range rc.tables {
		rc.readRefs(tb.name, where)
	}
}

// checkVersions compares what the client reads now with what the writer
// recorded.
func checkVersions(t *testing.T, tb *chaosTable, vt verifiedTable, where string) {
	t.Helper()
	listed := map[uint64]bool{}
	for _, v := range vt.Versions {
		listed[v.Version] = true
		rec, ok := tb.records[v.Version]
		switch {
		case v.Error != "":
			t.Errorf("%s: %s version %d is listed but does not open or read: %s", where, tb.name, v.Version, v.Error)
		case !ok:
			t.Errorf("%s: %s lists version %d, which the writer never made", where, tb.name, v.Version)
		case v.Rows != rec.Rows || v.Digest != rec.Digest:
			t.Errorf("%s: %s version %d reads %d rows (digest %s), had %d (digest %s) when written", where, tb.name, v.Version, v.Rows, v.Digest, rec.Rows, rec.Digest)
		}
	}
	require.True(t, listed[tb.latest], "%s: %s's newest version %d is not listed (listed: %v)", where, tb.name, tb.latest, sortedKeys(listedNames(listed)))
}

func listedNames(m map[uint64]bool) map[string]bool {
	out := map[string]bool{}
	for v := range m {
		out[fmt.Sprintf("%06d", v)] = true
	}
	return out
}

// readRefs reads the table with reaper's reader and keeps the references
// of the versions not seen before.
func (rc *retainChaos) readRefs(name, where string) *lance.Table {
	t := rc.t
	tb, err := lance.ReadTable(t.Context(), rc.b.raw, lifecycle.TableDir(name))
	require.NoError(t, err, "%s: read %s", where, name)
	seen := rc.seen[name]
	if seen == nil {
		seen = map[uint64]versionRefs{}
		rc.seen[name] = seen
	}
	for _, v := range tb.Versions {
		if _, ok := seen[v.Number]; !ok {
			keys, indices := v.Refs()
			seen[v.Number] = versionRefs{keys: append(keys, v.Key), indices: indices}
		}
	}
	return tb
}

// finish ends the test: the writer compacts until a compaction makes no
// version and stops; passes run until no lease and no record is left; each
// table is compared with the client's own cleanup; nothing leaked.
func (rc *retainChaos) finish() {
	t := rc.t
	where := fmt.Sprintf("seed %d, final", rc.seed)
	for calls := 1; ; calls++ {
		var specs []writeSpec
		for _, tb := range rc.tables {
			specs = append(specs, writeSpec{Name: tb.name, Kind: "plain", Ops: []writerOp{{Op: "compact"}}})
		}
		res, err := rc.w.write("write", specs)
		require.NoError(t, err, where)
		rc.recordWrites(res, where)
		made := 0
		for _, r := range res {
			made += len(r.Versions)
		}
		if made == 0 {
			break
		}
		require.Less(t, calls, 6, "%s: compaction still makes versions after %d calls", where, calls)
	}
	rc.converge(where)
	rc.check(where)
	for _, tb := range rc.tables {
		rc.compareWithLance(tb.name, where)
	}
	rc.check(where + ", after the comparison passes")
	rc.checkNoLeaks(where)
}

// converge runs passes (the rounds' policy) until no lease and no record is
// left, waiting for the takeover time of leases killed passes left.
func (rc *retainChaos) converge(where string) {
	t := rc.t
	deadline := time.Now().Add(30 * time.Second)
	for {
		waitTakeover(t, rc.b, shortSkew, where+": wait for the leases' takeover time")
		rc.pass(where+", converging", nil)
		if len(rc.records()) == 0 && len(leases(t, rc.b)) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s: records %v and leases %v left after passes", where, rc.records(), sortedKeys(leases(t, rc.b)))
	}
}

// compareWithLance runs one pass on table name with a cutoff placed
// mid-gap between two of its versions, and the client's own cleanup with
// the same cutoff on a copy made just before: the files left must be
// equal.
//
// A copy is a valid oracle here, which the retention oracle
// (test/interop) found it is not in general: a branch names its parent by
// its absolute location (the writer makes no branch), and Lance's cleanup
// compares files' modification times with version timestamps (cp -a keeps
// them; the client reads mtime only). Comparing with the plan instead
// would check reaper against itself: the pass deletes its plan by
// construction; only Lance says what the plan should have been.
func (rc *retainChaos) compareWithLance(name, where string) {
	t := rc.t
	where = fmt.Sprintf("%s, %s", where, name)
	tbl := rc.readRefs(name, where)
	cutoff := rc.pickCutoff(tbl, where)
	copyRoot := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.MkdirAll(copyRoot, 0o755))
	dir := strings.TrimSuffix(lifecycle.TableDir(name), "/")
	out, err := exec.Command("cp", "-a", filepath.Join(rc.b.dir, dir), filepath.Join(copyRoot, dir)).CombinedOutput()
	require.NoError(t, err, "cp -a: %s", out)
	before := filesUnder(t, filepath.Join(rc.b.dir, dir))
	require.Equal(t, before, filesUnder(t, filepath.Join(copyRoot, dir)), "%s: the copy", where)

	// A pass that loses its lease (starved) leaves its record, and the
	// next finishes that plan, made with this cutoff.
	removed := 0
	for {
		_, rep := rc.pass(where, []string{"--before", cutoff.UTC().Format(time.RFC3339Nano), name})
		require.Len(t, rep.Tables, 1)
		removed += rep.Tables[0].VersionsDeleted
		if rep.Tables[0].Result != "failed" && rep.Tables[0].Result != "locked" {
			break
		}
		waitTakeover(t, rc.b, shortSkew, where+": wait for the lease's takeover time")
	}
	res, err := rc.w.cleanup(copyRoot, []string{name}, cutoff)
	require.NoError(t, err, where)
	require.Len(t, res, 1)
	require.Empty(t, res[0].Error, "%s: the client's cleanup failed", where)

	mine, lances := filesUnder(t, filepath.Join(rc.b.dir, dir)), filesUnder(t, filepath.Join(copyRoot, dir))
	var diffs []string
	for k := range lances {
		if !before[k] {
			diffs = append(diffs, "the client's optimize wrote "+k+" (it compacted: the comparison needs a table with nothing to compact)")
		} else if !mine[k] {
			diffs = append(diffs, fmt.Sprintf("reaper deleted %s, Lance kept it (%s)", k, rc.referencedBy(name, k)))
		}
	}
	for k := range mine {
		if !lances[k] {
			diffs = append(diffs, fmt.Sprintf("Lance deleted %s, reaper kept it (%s)", k, rc.referencedBy(name, k)))
		}
	}
	if want := res[0].VersionsBefore - removed; res[0].VersionsAfter != want {
		diffs = append(diffs, fmt.Sprintf("Lance left %d of %d versions, reaper %d", res[0].VersionsAfter, res[0].VersionsBefore, want))
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s, cutoff %s: the files reaper left differ from those the client's cleanup left on a copy:\n  %s",
			where, cutoff.UTC().Format(time.RFC3339Nano), strings.Join(diffs, "\n  "))
	}
	t.Logf("%s: cutoff %s: reaper and the client's cleanup each removed %d versions and %d files",
		where, cutoff.UTC().Format(time.RFC3339Nano), removed, len(before)-len(lances))
	vts, err := rc.w.verify(copyRoot, []string{name})
	require.NoError(t, err, where)
	for _, tb := range rc.tables {
		if tb.name == name {
			checkVersions(t, tb, vts[0], where+", the copy Lance cleaned")
		}
	}
}

// pickCutoff draws a cutoff mid-gap between two versions at least 200ms
// apart (or between the newest and the store's clock): the client turns a
// cutoff into an age against its own now, so the cutoff needs a margin.
func (rc *retainChaos) pickCutoff(tbl *lance.Table, where string) time.Time {
	const minGap = 200 * time.Millisecond
	now := rc.b.storeNow(rc.t).Add(-minGap / 2)
	var gaps []time.Time
	for i, v := range tbl.Versions {
		hi := now
		if i+1 < len(tbl.Versions) {
			hi = tbl.Versions[i+1].Timestamp
		}
		if hi.Sub(v.Timestamp) >= minGap {
			gaps = append(gaps, v.Timestamp.Add(hi.Sub(v.Timestamp)/2))
		}
	}
	require.NotEmpty(rc.t, gaps, "%s: no two versions %s apart to cut between", where, minGap)
	return gaps[rc.rng.IntN(len(gaps))]
}

// filesUnder lists the regular files under dir, relative to it.
func filesUnder(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = true
		return err
	}))
	return out
}

// referencedBy names the versions seen referencing key, for a failure
// message.
func (rc *retainChaos) referencedBy(name, key string) string {
	var vs []string
	for n, refs := range rc.seen[name] {
		if slices.Contains(refs.keys, key) || slices.ContainsFunc(refs.indices, func(ix string) bool { return strings.HasPrefix(key, lance.IndicesDir+ix+"/") }) {
			vs = append(vs, fmt.Sprint(n))
		}
	}
	if len(vs) == 0 {
		return "no version seen references it"
	}
	slices.Sort(vs)
	return "referenced by versions " + strings.Join(vs, ", ")
}

// checkNoLeaks: after the final passes every file of the directories
// Lance's cleanup manages is referenced by a version the table still lists
// (the writer never left a write half done, unless an operation failed),
// and no record or lease is left.
func (rc *retainChaos) checkNoLeaks(where string) {
	t := rc.t
	for _, tb := range rc.tables {
		var leaked []string
		for _, k := range unreferenced(rc.readRefs(tb.name, where)) {
			leaked = append(leaked, fmt.Sprintf("%s (%s)", k, rc.referencedBy(tb.name, k)))
		}
		if len(leaked) > 0 && rc.writeErrors {
			t.Logf("%s: %s: files no listed version references, perhaps of the failed writes: %v", where, tb.name, leaked)
		} else if len(leaked) > 0 {
			t.Errorf("%s: %s: leaked: files no listed version references:\n  %s", where, tb.name, strings.Join(leaked, "\n  "))
		}
	}
	require.Empty(t, rc.records(), "%s: retention records left after a clean pass", where)
	require.Empty(t, leases(t, rc.b), "%s: leases left after a clean pass", where)
}

// unreferenced are the files of the directories Lance's cleanup manages
// that no version of tbl (main or detached) references, sorted: after a
// finished cleanup of a table nobody writes, a leak.
func unreferenced(tbl *lance.Table) []string {
	keys, indices := map[string]bool{}, map[string]bool{}
	for _, v := range slices.Concat(tbl.Versions, tbl.Detached) {
		k, ix := v.Refs()
		for _, x := range append(k, v.Key) {
			keys[x] = true
		}
		for _, x := range ix {
			indices[x] = true
		}
	}
	var out []string
	for _, o := range tbl.Objects {
		uuid, _, _ := strings.Cut(strings.TrimPrefix(o.Key, lance.IndicesDir), "/")
		switch {
		case keys[o.Key], strings.HasPrefix(o.Key, lance.IndicesDir) && indices[uuid]:
		case o.Key == lance.VersionsDir+"latest_version_hint.json":
		default:
			out = append(out, o.Key)
		}
	}
	slices.Sort(out)
	return out
}
