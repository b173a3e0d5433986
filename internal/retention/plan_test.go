package retention

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus minutes.
func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

// ver builds version n written at minute n, with the given data files, an
// optional deletion file of fragment 0 and indices.
func ver(n uint64, data []string, del *lance.DeletionFile, indices ...string) lance.Version {
	frag := lance.Fragment{ID: 0, Deletion: del}
	for _, d := range data {
		frag.Files = append(frag.Files, lance.DataFile{Path: d})
	}
	m := lance.Manifest{Version: n, Timestamp: at(float64(n)), TransactionFile: fmt.Sprintf("%d-t%d.txn", n-1, n), Fragments: []lance.Fragment{frag}}
	for _, ix := range indices {
		m.Indices = append(m.Indices, lance.Index{UUID: ix, Name: "idx"})
	}
	return lance.Version{Number: n, Key: lance.VersionsDir + lance.ManifestName(lance.SchemeV2, n), Size: 100, LastModified: at(float64(n)), Manifest: m}
}

// table is a history of five versions: b.lance replaces a.lance, then c,
// then d joins; a deletion file at version 2; index i1 at version 3, i2
// from version 4. Every file was written just before its version; orphans
// are added per case.
func table() *lance.Table {
	del := &lance.DeletionFile{ReadVersion: 1, ID: 7}
	vs := []lance.Version{
		ver(1, []string{"a.lance"}, nil),
		ver(2, []string{"a.lance", "b.lance"}, del),
		ver(3, []string{"b.lance", "c.lance"}, nil, "i1"),
		ver(4, []string{"c.lance"}, nil, "i2"),
		ver(5, []string{"c.lance", "d.lance"}, nil, "i2"),
	}
	tb := &lance.Table{Dir: "t.lance/", URI: "/r/t.lance", Versions: vs}
	obj := func(key string, min float64) {
		tb.Objects = append(tb.Objects, objstore.Object{Key: key, Size: 10, LastModified: at(min)})
	}
	for _, v := range vs {
		obj(v.Key, float64(v.Number))
		obj(lance.TransactionsDir+v.TransactionFile, float64(v.Number)-0.1)
	}
	obj(lance.VersionsDir+"latest_version_hint.json", 5)
	for i, d := range []string{"a", "b", "c", "d"} {
		obj(lance.DataDir+d+".lance", float64(i)+0.9)
	}
	obj(lance.DeletionFileKey(0, 1, 7, false), 1.9)
	obj(lance.IndicesDir+"i1/index.idx", 2.9)
	obj(lance.IndicesDir+"i1/aux.idx", 2.9)
	obj(lance.IndicesDir+"i2/index.idx", 3.9)
	return tb
}

func withObject(tb *lance.Table, key string, modified time.Time) *lance.Table {
	tb.Objects = append(tb.Objects, objstore.Object{Key: key, Size: 10, LastModified: modified})
	return tb
}

// withBranch adds branch dev, rooted at version 2, whose one version
// references main's b.lance and index i1 through a base path naming the
// table, and a data file of its own.
func withBranch(tb *lance.Table) *lance.Table {
	bv := ver(3, nil, nil)
	bv.Key = "tree/dev/_versions/" + lance.ManifestName(lance.SchemeV2, 3)
	bv.Branch = "dev"
	bv.BasePaths = []lance.BasePath{{ID: 0, IsDatasetRoot: true, Path: "file:///r/t.lance/"}}
	bv.Fragments = []lance.Fragment{{Files: []lance.DataFile{{Path: "b.lance", HasBase: true}, {Path: "own.lance"}}}}
	bv.Indices = []lance.Index{{UUID: "i1", HasBase: true}}
	tb.Branches = []lance.Branch{{Name: "dev", RootVersion: 2, ParentVersion: 2, Versions: []lance.Version{bv}}}
	return tb
}

// manifests are the manifest keys of versions ns.
func manifests(ns ...uint64) []string {
	var out []string
	for _, n := range ns {
		out = append(out, lance.VersionsDir+lance.ManifestName(lance.SchemeV2, n))
	}
	return out
}

func keys(p Plan) []string {
	var out []string
	for _, f := range p.Files {
		out = append(out, f.Key)
	}
	sort.Strings(out)
	return out
}

func sorted(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	sort.Strings(out)
	return out
}

var (
	// removed123 are the files only versions 1-3 reference.
	removed123 = []string{"_transactions/0-t1.txn", "_transactions/1-t2.txn", "_transactions/2-t3.txn",
		"data/a.lance", "data/b.lance", "_deletions/0-1-7.arrow", "_indices/i1/aux.idx", "_indices/i1/index.idx"}
	now = at(60)
)

func TestCompute(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name    string
		tb      *lance.Table
		p       Policy
		now     time.Time
		removed []uint64
		files   []string
	}{
		{"versions before the cutoff go with the files only they reference", table(), Policy{Before: at(3.5)}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
		{"older_than is measured on the store's clock", table(), Policy{OlderThan: 56*time.Minute + 30*time.Second}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
		{"the newest version is kept however old", table(), Policy{Before: at(100)}, now,
			[]uint64{1, 2, 3, 4}, sorted(manifests(1, 2, 3, 4), removed123, []string{"_transactions/3-t4.txn"})},
		{"keep_versions keeps the newest N", table(), Policy{Before: at(3.5), KeepVersions: 3}, now,
			[]uint64{1, 2}, sorted(manifests(1, 2), []string{"_transactions/0-t1.txn", "_transactions/1-t2.txn", "data/a.lance", "_deletions/0-1-7.arrow"})},
		{"nothing before the cutoff: nothing to do", table(), Policy{Before: at(0.5)}, now, nil, nil},
		{"an unreferenced file newer than the unverified threshold stays", withObject(table(), "data/orphan.lance", at(2)), Policy{Before: at(3.5)}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
		{"delete_unverified takes it", withObject(table(), "data/orphan.lance", at(2)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"data/orphan.lance"})},
		{"so does age, by the store's clock", withObject(table(), "data/orphan.lance", at(2)), Policy{Before: at(3.5)}, at(2).Add(week + time.Second),
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"data/orphan.lance"})},
		{"a younger one stays", withObject(table(), "data/orphan.lance", at(2)), Policy{Before: at(3.5)}, at(2).Add(week - time.Second),
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
		{"unverified_after shortens the threshold", withObject(table(), "data/orphan.lance", at(2)), Policy{Before: at(3.5), UnverifiedAfter: 30 * time.Minute}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"data/orphan.lance"})},
		{"an unreferenced file written after the earliest kept version is not listed", withObject(table(), "data/orphan.lance", at(4.5)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
		{"an unreferenced index directory is unverified", withObject(table(), "_indices/i0/index.idx", at(1)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"_indices/i0/index.idx"})},
		{"and listed whatever its age", withObject(table(), "_indices/i0/index.idx", at(30)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"_indices/i0/index.idx"})},
		{"a manifest being written is unverified", withObject(table(), "_versions/.tmp_6.manifest_x", at(1)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"_versions/.tmp_6.manifest_x"})},
		{"so is a file in a _versions/.tmp directory (Lance: cleanup_preserves_unmanaged_dirs_and_files)", withObject(table(), "_versions/.tmp/orphan", at(1)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123, []string{"_versions/.tmp/orphan"})},
		{"files of unknown kinds stay", withObject(withObject(table(), "data/x.blob", at(1)), "_deletions/notes.txt", at(1)), Policy{Before: at(3.5), DeleteUnverified: true}, now,
			[]uint64{1, 2, 3}, sorted(manifests(1, 2, 3), removed123)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.tb, tc.p, tc.now)
			require.NoError(t, err)
			require.Equal(t, tc.removed, p.Removed)
			require.Equal(t, tc.files, keys(p))
			var want int64
			for _, k := range tc.files {
				if strings.HasSuffix(k, ".manifest") {
					want += 100 // a manifest's size is the version's
				} else {
					want += 10
				}
			}
			require.Equal(t, want, p.Bytes)
		})
	}
}

func TestComputeKeeps(t *testing.T) {
	t.Run("a tagged version is kept with every file it references", func(t *testing.T) {
		tb := table()
		tb.Tags = []lance.Tag{{Name: "release", Version: 2}, {Name: "on-a-branch", Branch: "dev", Version: 1}}
		p, err := Compute(tb, Policy{Before: at(3.5)}, now)
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 3}, p.Removed, "a tag on another branch keeps nothing of main")
		require.Contains(t, p.Kept, Kept{Version: 2, Why: "tagged release"})
		require.Equal(t, sorted(manifests(1, 3), []string{"_transactions/0-t1.txn", "_transactions/2-t3.txn", "_indices/i1/aux.idx", "_indices/i1/index.idx"}), keys(p))
	})
	t.Run("kept versions say why", func(t *testing.T) {
		p, err := Compute(table(), Policy{Before: at(3.5), KeepVersions: 3}, now)
		require.NoError(t, err)
		require.Equal(t, []Kept{{3, "among the newest 3"}, {4, "newer than the cutoff"}, {5, "latest"}}, p.Kept)
	})
	t.Run("a detached version keeps what it references", func(t *testing.T) {
		tb := table()
		d := ver(2, []string{"a.lance"}, nil)
		d.Key = "_versions/d9.manifest"
		tb.Detached = []lance.Version{d}
		p, err := Compute(tb, Policy{Before: at(3.5)}, now)
		require.NoError(t, err)
		require.NotContains(t, keys(p), "data/a.lance")
		require.NotContains(t, keys(p), "_transactions/1-t2.txn")
		require.NotContains(t, keys(p), "_versions/d9.manifest")
	})
	t.Run("a branch keeps main's files it references and its root manifest", func(t *testing.T) {
		tb := withBranch(table())
		p, err := Compute(tb, Policy{Before: at(3.5)}, now)
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 3}, p.Removed)
		require.Contains(t, p.Kept, Kept{Version: 2, Why: "root of branch dev"})
		// Version 2's transaction file goes, as in Lance: the branch does not
		// reference it.
		require.Equal(t, sorted(manifests(1, 3), []string{"_transactions/0-t1.txn", "_transactions/1-t2.txn", "_transactions/2-t3.txn",
			"data/a.lance", "_deletions/0-1-7.arrow"}), keys(p))
	})
	t.Run("a removed version newer than a kept one lifts the listing cutoff", func(t *testing.T) {
		tb := withObject(table(), "_transactions/9-orphan.txn", at(3))
		tb.Tags = []lance.Tag{{Name: "old", Version: 1}}
		p, err := Compute(tb, Policy{Before: at(3.5), DeleteUnverified: true}, now)
		require.NoError(t, err)
		require.Contains(t, keys(p), "_transactions/9-orphan.txn", "listed although written after the tagged version 1")
	})
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, "set older_than"},
		{Policy{OlderThan: time.Hour, Before: t0}, "both set"},
		{Policy{OlderThan: -time.Hour}, "negative"},
		{Policy{OlderThan: time.Hour, KeepVersions: -1}, "keep_versions -1"},
		{Policy{Before: t0, UnverifiedAfter: -1}, "unverified_after"},
	} {
		err := tc.p.Validate()
		require.ErrorIs(t, err, ErrInvalidPolicy)
		require.ErrorContains(t, err, tc.want)
		_, err = Compute(table(), tc.p, now)
		require.ErrorIs(t, err, ErrInvalidPolicy)
	}
	require.NoError(t, Policy{OlderThan: time.Hour}.Validate())
	require.Equal(t, now.Add(-time.Hour), Policy{OlderThan: time.Hour}.Cutoff(now))
	require.Equal(t, t0, Policy{Before: t0}.Cutoff(now))
}

func TestComputeNeedsAVersion(t *testing.T) {
	_, err := Compute(&lance.Table{Dir: "t.lance/"}, Policy{Before: t0}, now)
	require.ErrorContains(t, err, "no version")
}

// A version goes only when its manifest's timestamp and its LastModified
// (the store's clock) are both before the cutoff: a writer whose clock runs
// a week slow stamps old timestamps on versions the store wrote just now.
func TestComputeKeepsAVersionTheStoreWroteAfterTheCutoff(t *testing.T) {
	tb := table()
	// Versions 2 and 3 stamped by a slow clock, written at minute 5.5.
	tb.Versions[1].LastModified = at(5.5)
	tb.Versions[2].LastModified = at(5.5)
	p, err := Compute(tb, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, p.Removed)
	require.Contains(t, p.Kept, Kept{Version: 2, Why: WhyStoreNewer})
	require.Contains(t, p.Kept, Kept{Version: 3, Why: WhyStoreNewer})
}

// The floor refuses every age of a policy that allows a deletion: a cutoff
// newer than the floor (a "7" meant as 7 days, a --before in the future)
// and an unverified_after below it (an index build in progress), and
// allows them with a floor of 0 or DeleteUnverified's explicit choice.
func TestCheckFloor(t *testing.T) {
	now := at(60 * 24 * 30)
	for _, tc := range []struct {
		name  string
		p     Policy
		floor time.Duration
		err   string
	}{
		{"7 days", Policy{OlderThan: 7 * 24 * time.Hour}, time.Hour, ""},
		{"7 nanoseconds", Policy{OlderThan: 7}, time.Hour, "older_than 7ns"},
		{"before, an hour ago", Policy{Before: now.Add(-2 * time.Hour)}, time.Hour, ""},
		{"before, a minute ago", Policy{Before: now.Add(-time.Minute)}, time.Hour, "written 1m0s ago"},
		{"before, in the future", Policy{Before: now.Add(time.Minute)}, time.Hour, "in the future"},
		{"unverified after 2s", Policy{OlderThan: 48 * time.Hour, UnverifiedAfter: 2 * time.Second}, time.Hour, "unverified_after 2s"},
		{"unverified after 2s, delete_unverified chosen", Policy{OlderThan: 48 * time.Hour, UnverifiedAfter: 2 * time.Second, DeleteUnverified: true}, time.Hour, ""},
		{"no floor", Policy{OlderThan: 7, UnverifiedAfter: time.Second}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.CheckFloor(now, tc.floor)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBelowFloor)
			require.ErrorContains(t, err, tc.err)
		})
	}
}
