package retention

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// planKeys are the keys of a plan's files.
func planKeys(p Plan) []string {
	var ks []string
	for _, f := range p.Files {
		ks = append(ks, f.Key)
	}
	return ks
}

// Read again unchanged, the table allows the whole plan.
func TestRecheckUnchanged(t *testing.T) {
	tb := table()
	p, err := Compute(tb, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, p.Removed)
	removed, files := Recheck(tb, p.Removals, planKeys(p), false)
	require.Equal(t, p.Removals, removed)
	require.Equal(t, planKeys(p), files)
}

// A branch's root version that the policy removes is kept for its manifest
// alone (and what the branch references): read again unchanged, the table
// allows the files of that version the plan deletes, its transaction file
// among them, so the run deletes what its dry run listed.
func TestRecheckKeepsABranchRootsManifestOnly(t *testing.T) {
	tb := withBranch(table())
	p, err := Compute(tb, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Contains(t, p.Kept, Kept{Version: 2, Why: "root of branch dev"})
	require.Contains(t, planKeys(p), "_transactions/1-t2.txn", "as Lance does, the root's transaction file goes")
	removed, files := Recheck(tb, p.Removals, planKeys(p), false)
	require.Equal(t, p.Removed, Versions(removed))
	require.Equal(t, planKeys(p), files)

	// Another branch rooted there that references none of main's files (a
	// branch of the branch: it names the branch's files) changes nothing.
	nested := tb.Branches[0]
	nested.Name, nested.ParentBranch = "dev/nested", "dev"
	nested.Versions = []lance.Version{ver(4, nil, nil)}
	tb.Branches = append(tb.Branches, nested)
	removed, files = Recheck(tb, p.Removals, planKeys(p), false)
	require.Equal(t, p.Removed, Versions(removed))
	require.Equal(t, planKeys(p), files)

	// A root the plan did not take for removed (kept by the policy, or
	// committed since: its transaction file is not planned) keeps every
	// file it references, its branch notwithstanding, also one a record
	// made earlier names (data/a.lance, before a restore referenced it).
	p4, err := Compute(withBranch(table()), Policy{Before: at(1.5)}, at(6))
	require.NoError(t, err)
	require.Contains(t, p4.Kept, Kept{Version: 2, Why: "newer than the cutoff"})
	require.NotContains(t, planKeys(p4), "_transactions/1-t2.txn")
	_, files = Recheck(withBranch(table()), p4.Removals, append(planKeys(p4), "data/a.lance"), false)
	require.NotContains(t, files, "data/a.lance", "version 2 references it")

	// A later plan, once a run deleted the root's transaction file: the
	// root still stands for its manifest alone (the plan deletes what the
	// branch does not reference of it).
	gone := withBranch(table())
	gone.Objects = slices.DeleteFunc(gone.Objects, func(o objstore.Object) bool { return o.Key == "_transactions/1-t2.txn" })
	p5, err := Compute(gone, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Contains(t, planKeys(p5), "data/a.lance")
	removed, files = Recheck(gone, p5.Removals, planKeys(p5), false)
	require.Equal(t, p5.Removed, Versions(removed))
	require.Equal(t, planKeys(p5), files)

	// A version committed since the plan (a restore of version 2) that a
	// branch is rooted at, no longer the newest: it keeps every file it
	// references.
	late := withBranch(table())
	p6, err := Compute(late, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Contains(t, planKeys(p6), "data/a.lance")
	late.Versions = append(late.Versions, ver(6, []string{"a.lance", "b.lance"}, nil), ver(7, []string{"d.lance"}, nil))
	lateBranch := late.Branches[0]
	lateBranch.Name, lateBranch.RootVersion = "late", 6
	late.Branches = append(late.Branches, lateBranch)
	_, files = Recheck(late, p6.Removals, planKeys(p6), false)
	require.NotContains(t, files, "data/a.lance", "version 6 references it")

	// A branch rooted there whose manifests are not written yet (a branch
	// being created) keeps every file of the root, as before.
	tb.Branches = append(tb.Branches, lance.Branch{Name: "new", RootVersion: 2})
	removed, files = Recheck(tb, p.Removals, planKeys(p), false)
	require.Equal(t, p.Removed, Versions(removed))
	require.NotContains(t, files, "_transactions/1-t2.txn")
	require.NotContains(t, files, "data/a.lance")
}

// What a writer did between the plan and the deletes narrows the plan and
// never widens it.
func TestRecheckNarrows(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(tb *lance.Table)
		wantRemoved []uint64
		kept        []string // files of the plan no longer deleted
	}{
		{"a restore of version 2 re-references a.lance, b.lance and the deletion file", func(tb *lance.Table) {
			del := &lance.DeletionFile{ReadVersion: 1, ID: 7}
			tb.Versions = append(tb.Versions, ver(6, []string{"a.lance", "b.lance"}, del))
		}, []uint64{1, 2, 3}, []string{"data/a.lance", "data/b.lance", lance.DeletionFileKey(0, 1, 7, false)}},
		{"an index rebuilt with i1's uuid", func(tb *lance.Table) {
			tb.Versions = append(tb.Versions, ver(6, []string{"d.lance"}, nil, "i1"))
		}, []uint64{1, 2, 3}, []string{lance.IndicesDir + "i1/aux.idx", lance.IndicesDir + "i1/index.idx"}},
		{"a tag created on version 2", func(tb *lance.Table) {
			tb.Tags = append(tb.Tags, lance.Tag{Name: "keep", Version: 2})
		}, []uint64{1, 3}, append(manifests(2), "_transactions/1-t2.txn", "data/a.lance", "data/b.lance", lance.DeletionFileKey(0, 1, 7, false))},
		{"a branch rooted at version 3", func(tb *lance.Table) {
			tb.Branches = append(tb.Branches, lance.Branch{Name: "dev", RootVersion: 3})
		}, []uint64{1, 2}, append(manifests(3), "_transactions/2-t3.txn", "data/b.lance", lance.IndicesDir+"i1/aux.idx", lance.IndicesDir+"i1/index.idx")},
		{"version 1's manifest already gone (another cleanup, a crash): its files still go, its key is not deleted again", func(tb *lance.Table) {
			tb.Versions = tb.Versions[1:]
		}, []uint64{2, 3}, manifests(1)},
		{"version 2's manifest renamed (migrateManifestPathsV2): the delete of the planned key would miss", func(tb *lance.Table) {
			tb.Versions[1].Key = lance.VersionsDir + lance.ManifestName(lance.SchemeV1, 2)
		}, []uint64{1, 3}, []string{"data/a.lance", "data/b.lance", lance.DeletionFileKey(0, 1, 7, false), "_transactions/1-t2.txn", lance.VersionsDir + lance.ManifestName(lance.SchemeV2, 2)}},
		{"version 3's manifest rewritten (another size): not the manifest the plan saw", func(tb *lance.Table) {
			tb.Versions[2].Size++
		}, []uint64{1, 2}, append(manifests(3), "_transactions/2-t3.txn", "data/b.lance", lance.IndicesDir+"i1/aux.idx", lance.IndicesDir+"i1/index.idx")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := table()
			p, err := Compute(tb, Policy{Before: at(3.5)}, at(6))
			require.NoError(t, err)
			tc.change(tb)
			removed, files := Recheck(tb, p.Removals, planKeys(p), false)
			require.Equal(t, tc.wantRemoved, Versions(removed))
			var gone []string
			left := map[string]bool{}
			for _, f := range files {
				left[f] = true
			}
			for _, k := range planKeys(p) {
				if !left[k] {
					gone = append(gone, k)
				}
			}
			require.ElementsMatch(t, tc.kept, gone)
			for _, f := range files {
				require.Contains(t, planKeys(p), f, "never a file the plan did not name")
			}
		})
	}
}

// Once the manifests were deleted, a removed version still listed, under
// whatever key, is one LanceDB still reads: it stands with every file it
// references (a rename by migrateManifestPathsV2 made the deletes miss).
func TestRecheckAfterTheManifestsKeepsAVersionStillListed(t *testing.T) {
	tb := table()
	p, err := Compute(tb, Policy{Before: at(3.5)}, at(6))
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, p.Removed)
	// Versions 1 and 3 went; version 2 is still listed, under a new key.
	tb.Versions = []lance.Version{tb.Versions[1], tb.Versions[3], tb.Versions[4]}
	tb.Versions[0].Key = lance.VersionsDir + "renamed-2.manifest"
	removed, files := Recheck(tb, p.Removals, planKeys(p), true)
	require.Equal(t, []uint64{1, 3}, Versions(removed))
	for _, k := range []string{"data/a.lance", "data/b.lance", lance.DeletionFileKey(0, 1, 7, false), "_transactions/1-t2.txn"} {
		require.NotContains(t, files, k, "version 2 still reads %s", k)
	}
	// Unchanged but for the deletes, every removed version stays removed.
	tb = table()
	tb.Versions = tb.Versions[3:]
	removed, _ = Recheck(tb, p.Removals, planKeys(p), true)
	require.Equal(t, p.Removed, Versions(removed))
}
