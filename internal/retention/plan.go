package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
)

// Plan is what a policy removes from one table: the versions kept (each
// with why), the versions removed, and every file to delete with its size
// and why. Keys are relative to the table directory.
type Plan struct {
	Dir     string
	Cutoff  time.Time
	Kept    []Kept
	Removed []uint64
	// Removals are the removed versions' manifests as they were listed,
	// in Removed's order: a deleting run removes a version only while its
	// listed manifest is still this one (Recheck).
	Removals []Removal
	Files    []File
	Bytes    int64
}

// Removal is one removed version and its manifest as the plan saw it.
type Removal struct {
	Version uint64
	// Key is the manifest's key relative to the table directory; Size and
	// Modified (its LastModified) tell it from a manifest written at the
	// same key since (a table dropped and created again).
	Key      string
	Size     int64
	Modified time.Time
}

// Is reports whether v is the manifest r names: same key, size and, when
// r knows it, LastModified to the millisecond (a record keeps no more).
func (r Removal) Is(v lance.Version) bool {
	return v.Key == r.Key && v.Size == r.Size && (r.Modified.IsZero() || v.LastModified.UnixMilli() == r.Modified.UnixMilli())
}

// Kept is a version the plan keeps and why.
type Kept struct {
	Version uint64
	Why     string
}

// File is one file the plan deletes.
type File struct {
	Key   string
	Bytes int64
	Why   string
	// Verified: a removed version referenced it (it is no write in
	// progress); otherwise no manifest references it and it is deleted
	// for its age or because the policy deletes unverified files.
	Verified bool
	// Modified is its LastModified as listed: with Key and Bytes, its
	// identity in a retention record.
	Modified time.Time
}

// WhyStoreNewer keeps a version whose manifest's timestamp is older than
// the cutoff but which the store wrote after it (LastModified): a writer's
// clock that runs slow must not make a fresh version look old.
const WhyStoreNewer = "written after the cutoff by the store's clock (its manifest's timestamp is older: copied in since, or a writer's clock running slow)"

// Why a file is deleted.
const (
	WhyManifest   = "manifest of a removed version"
	WhyVerified   = "verified: referenced only by removed versions"
	WhyUnverified = "unverified: no manifest references it"
)

// refs is a set of file keys and index uuids.
type refs struct {
	keys    map[string]bool
	indices map[string]bool
}

func newRefs() refs { return refs{keys: map[string]bool{}, indices: map[string]bool{}} }

func (r refs) add(keys, indices []string) {
	for _, k := range keys {
		r.keys[k] = true
	}
	for _, ix := range indices {
		r.indices[ix] = true
	}
}

// planner holds one Compute call's state.
type planner struct {
	t      *lance.Table
	p      Policy
	now    time.Time
	cutoff time.Time
	// referenced are the files of the versions kept; verified those of the
	// versions removed.
	referenced, verified refs
	removed              map[uint64]lance.Version
	kept                 []Kept
	// earliestKept and latestRemoved are manifest timestamps: Lance lists
	// only files not modified after the earliest kept version, unless a
	// removed version is newer than it.
	earliestKept, latestRemoved time.Time
}

// Compute plans policy p on table t, now being the store's clock. A version
// is removed only when both its manifest's timestamp (the writer's clock)
// and its manifest's LastModified (the store's) are before the cutoff. It
// never plans the newest version, a version among the newest KeepVersions, a
// tagged version of main (Lance's error_if_tagged_old_versions=false: a
// background pass cannot stop at every tag, so it keeps them with every
// file they reference), or a file a kept version, a detached version or a
// branch references.
func Compute(t *lance.Table, p Policy, now time.Time) (Plan, error) {
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	if len(t.Versions) == 0 {
		return Plan{}, fmt.Errorf("plan %s: the table has no version (lance.ReadTable refuses such a table)", t.Dir)
	}
	pl := &planner{t: t, p: p, now: now, cutoff: p.Cutoff(now),
		referenced: newRefs(), verified: newRefs(), removed: map[uint64]lance.Version{}}
	pl.classify()
	for _, v := range t.Detached {
		pl.referenced.add(v.Refs())
	}
	pl.keepBranchFiles()
	plan := Plan{Dir: t.Dir, Cutoff: pl.cutoff, Kept: pl.kept}
	for _, o := range t.Objects {
		if why, verified, del := pl.decide(o.Key, o.LastModified); del {
			plan.Files = append(plan.Files, File{Key: o.Key, Bytes: o.Size, Why: why, Verified: verified, Modified: o.LastModified})
		}
	}
	for n, v := range pl.removed {
		plan.Removed = append(plan.Removed, n)
		plan.Files = append(plan.Files, File{Key: v.Key, Bytes: v.Size, Why: fmt.Sprintf("%s (%d)", WhyManifest, n), Verified: true, Modified: v.LastModified})
	}
	slices.Sort(plan.Removed)
	for _, n := range plan.Removed {
		v := pl.removed[n]
		plan.Removals = append(plan.Removals, Removal{Version: n, Key: v.Key, Size: v.Size, Modified: v.LastModified})
	}
	slices.SortFunc(plan.Kept, func(a, b Kept) int { return cmp.Compare(a.Version, b.Version) })
	slices.SortFunc(plan.Files, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	for _, f := range plan.Files {
		plan.Bytes += f.Bytes
	}
	return plan, nil
}

// classify splits main's versions into kept and removed, as Lance's
// process_manifest_file does.
func (pl *planner) classify() {
	vs := pl.t.Versions
	latest := vs[len(vs)-1].Number
	// Lance's retain_n_versions: versions below the Nth newest are
	// cleanable (all of them are kept when there are fewer).
	keepFrom := vs[0].Number
	if n := pl.p.keep(); len(vs) > n {
		keepFrom = vs[len(vs)-n].Number
	}
	tags := map[uint64][]string{}
	for _, tg := range pl.t.Tags {
		if tg.Branch == "" {
			tags[tg.Version] = append(tags[tg.Version], tg.Name)
		}
	}
	for _, v := range vs {
		why := ""
		switch {
		case v.Number >= latest:
			why = "latest"
		case !v.Timestamp.Before(pl.cutoff):
			why = "newer than the cutoff"
		case !v.LastModified.Before(pl.cutoff):
			// A writer whose clock runs slow stamps an old timestamp on a
			// version the store dates now: the store's clock decides too.
			why = WhyStoreNewer
		case v.Number >= keepFrom:
			why = fmt.Sprintf("among the newest %d", pl.p.keep())
		case len(tags[v.Number]) > 0:
			why = "tagged " + strings.Join(tags[v.Number], ", ")
		}
		if why == "" {
			pl.removed[v.Number] = v
			pl.verified.add(v.Refs())
			if v.Timestamp.After(pl.latestRemoved) {
				pl.latestRemoved = v.Timestamp
			}
			continue
		}
		pl.kept = append(pl.kept, Kept{Version: v.Number, Why: why})
		pl.referenced.add(v.Refs())
		if pl.earliestKept.IsZero() || v.Timestamp.Before(pl.earliestKept) {
			pl.earliestKept = v.Timestamp
		}
	}
}

// keepBranchFiles keeps the files of main that branches reference, as
// Lance's retain_branch_lineage_files does for every branch whose root
// version of main is to be removed (or gone): every manifest of the branch
// is read, and the data, deletion and index files it names through a base
// path naming this table are kept. (Lance reads a branch only when its
// root version is to be removed; reaper reads every branch, which keeps
// nothing more: a branch references files of its root version.) The root
// version's manifest is kept too, its other files only as the branch
// references them: as Lance does, which in practice deletes just the root
// version's transaction file (the branch shares all its data; the version
// still opens, as the oracle checks).
func (pl *planner) keepBranchFiles() {
	for _, b := range pl.t.Branches {
		_, rootRemoved := pl.removed[b.RootVersion]
		referenced := false
		for _, v := range b.Versions {
			keys, indices := pl.t.MainRefs(v)
			pl.referenced.add(keys, indices)
			referenced = referenced || len(keys)+len(indices) > 0
		}
		if referenced && rootRemoved {
			delete(pl.removed, b.RootVersion)
			pl.kept = append(pl.kept, Kept{Version: b.RootVersion, Why: "root of branch " + b.Name})
		}
	}
}
