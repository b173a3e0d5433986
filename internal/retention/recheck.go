package retention

import (
	"cmp"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/lance"
)

// Recheck narrows a plan made earlier (the versions it removes, each with
// the manifest it planned to delete, and the keys of the files it deletes,
// relative to the table directory) to what the table, read again now,
// still allows: a deleting run calls it just before it deletes manifests
// (manifestsDeleted false) and again, manifestsDeleted true, before it
// deletes files.
//
// LanceDB writers do not take reaper's lease, so between the plan and the
// deletes a writer may have committed a version (an append, a compaction,
// a restore that re-references old files), created a tag or a branch, or
// renamed the manifests (migrateManifestPathsV2). A version is still
// removed only if it is not the newest, not tagged on main, not a
// branch's root, and its manifest is still listed as the plan saw it (same
// key, size and LastModified: not a table dropped and created again under
// the same name since; one already gone leaves nothing to delete, and its
// key is not deleted) — and, once the manifests were deleted, not listed
// at all: a version still listed then, under any key, is one
// LanceDB still reads, so it stands. A file is still deleted only if no
// version left standing (every version of main not removed, the detached
// ones, and every branch's manifests through base paths naming this
// table) references it, and a manifest only if its version is still
// removed. A root the plan kept for its branches stands for its manifest
// alone, as in the plan (branchRootsOnly). Nothing is added: what the table
// allows that the plan did not say stays.
func Recheck(t *lance.Table, removed []Removal, files []string, manifestsDeleted bool) ([]Removal, []string) {
	drop := map[uint64]bool{}
	if len(t.Versions) > 0 {
		drop[t.Latest().Number] = true
	}
	for _, tg := range t.Tags {
		if tg.Branch == "" {
			drop[tg.Version] = true
		}
	}
	for _, b := range t.Branches {
		drop[b.RootVersion] = true
	}
	listed := make(map[uint64]lance.Version, len(t.Versions))
	for _, v := range t.Versions {
		listed[v.Number] = v
	}
	var keepRemoved []Removal
	removing := map[uint64]bool{}
	for _, r := range removed {
		if drop[r.Version] {
			continue
		}
		v, ok := listed[r.Version]
		switch {
		case ok && (manifestsDeleted || !r.Is(v)):
			continue
		case !ok && !manifestsDeleted:
			// Gone before this run deleted it (another cleanup, or the
			// table dropped): nothing of it to delete, and its key must
			// not be deleted later, when a table created again may have
			// written a new manifest there.
			continue
		}
		keepRemoved = append(keepRemoved, r)
		removing[r.Version] = true
	}
	rootOnly := branchRootsOnly(t, Versions(removed), files)
	standing := newRefs()
	manifests := map[string]bool{} // manifests of versions left standing
	for _, v := range t.Versions {
		if removing[v.Number] {
			continue
		}
		manifests[v.Key] = true
		if !rootOnly[v.Number] {
			standing.add(v.Refs())
		}
	}
	for _, v := range t.Detached {
		standing.add(v.Refs())
		manifests[v.Key] = true
	}
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			standing.add(t.MainRefs(v))
		}
	}
	var keepFiles []string
	for _, k := range files {
		switch {
		case manifests[k], standing.keys[k]:
			continue
		case strings.HasPrefix(k, lance.IndicesDir):
			uuid, _, _ := strings.Cut(strings.TrimPrefix(k, lance.IndicesDir), "/")
			if standing.indices[uuid] {
				continue
			}
		case strings.HasPrefix(k, lance.VersionsDir):
			// A version's manifest goes only while the version is still
			// removed, listed or not.
			if n, ok := lance.ManifestVersion(strings.TrimPrefix(k, lance.VersionsDir)); ok && !removing[n] {
				continue
			}
		}
		keepFiles = append(keepFiles, k)
	}
	slices.SortFunc(keepRemoved, func(a, b Removal) int { return cmp.Compare(a.Version, b.Version) })
	return keepRemoved, keepFiles
}

// Versions are the version numbers of removals.
func Versions(rs []Removal) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Version
	}
	return out
}

// branchRootsOnly are the versions that stand only as a branch's root, as
// Compute keeps them (keepBranchFiles, Lance's retain_branch_lineage_files):
// their manifest stands, their files only as a branch references them (the
// branches' references are standing anyway), so the files of such a root
// the plan deletes (in practice its transaction file) are still deleted
// and the run deletes what its dry run listed. A root is one only when it
// is not the newest, no tag of main names it, the plan did not remove it,
// a branch rooted there references main's files (as in Compute) while none
// rooted there is without manifests, its manifest was listed when the
// table was read (so it is no version committed since the plan, such as a
// restore re-referencing files the plan deletes), and the plan took it for
// removed: its transaction file is planned, or already gone (deleted by an
// earlier run, as only such a root loses it while its manifest stays); a
// version the policy keeps has neither. Any other root keeps every file it
// references, as before.
func branchRootsOnly(t *lance.Table, removed []uint64, files []string) map[uint64]bool {
	held, unwritten := map[uint64]bool{}, map[uint64]bool{}
	for _, b := range t.Branches {
		if len(b.Versions) == 0 {
			unwritten[b.RootVersion] = true
		}
		for _, v := range b.Versions {
			if keys, indices := t.MainRefs(v); len(keys)+len(indices) > 0 {
				held[b.RootVersion] = true
				break
			}
		}
	}
	if len(held) == 0 {
		return held
	}
	for n := range unwritten {
		delete(held, n)
	}
	if len(t.Versions) > 0 {
		delete(held, t.Latest().Number)
	}
	for _, tg := range t.Tags {
		if tg.Branch == "" {
			delete(held, tg.Version)
		}
	}
	for _, n := range removed {
		delete(held, n)
	}
	planned := make(map[string]bool, len(files))
	for _, k := range files {
		planned[k] = true
	}
	listed := make(map[string]bool, len(t.Objects))
	for _, o := range t.Objects {
		listed[o.Key] = true
	}
	out := map[uint64]bool{}
	for _, v := range t.Versions {
		if !held[v.Number] || !listed[v.Key] || v.TransactionFile == "" {
			continue
		}
		if txn := lance.TransactionsDir + v.TransactionFile; planned[txn] || !listed[txn] {
			out[v.Number] = true
		}
	}
	return out
}
