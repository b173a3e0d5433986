package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns what a retention plan that found nothing to do leaves for
// the next pass of the same process (IdleMemo), and how that pass tells,
// with one listing or none, that the table still has nothing to remove: a
// fleet of tables is mostly idle between two passes, and reading every
// manifest of each one every pass costs more requests than the versions it
// reclaims are worth (docs/RETENTION.md, "An idle table").
//
// A table's plan changes only when time passes a version or an orphan file
// across its age limit, or the table changes: a version written (the
// _versions/ listing changes; so does a rename, a restore, a compaction), a
// tag or branch removed (the _refs/ listing changes; new ones only keep
// more), a record left beside it (the root's listing shows it). So:
//
//   - before Quiet, nothing can become removable whatever is written: every
//     version of main, the newest included, and every orphan file is younger
//     than its limit, and a file written since is younger still;
//   - before Idle, nothing listed can become removable: the table has
//     nothing to do as long as its _versions/ listing (and, when it has
//     tags or branches, its _refs/ listing) fingerprints as it did.
//
// Only a plan by the same policy, with nothing to do, no record, no
// delete_unverified (which deletes what no manifest names whatever its age)
// and not unsupported (a shallow clone's reads protect other tables: it is
// read every pass) leaves a memo.

// IdleMemo is what a plan with nothing to do leaves for the next pass.
type IdleMemo struct {
	policy       retention.Policy
	versions     uint64 // fingerprint of the _versions/ listing
	refs         uint64 // of the _refs/ listing, when hasRefs
	hasRefs      bool
	quiet, idle  time.Time
	manifestsFor *lance.Table // the table as read: its manifests, for a read of a changed table
}

// forever is a time no clock reaches: a Before policy's cutoff never moves.
var forever = time.Unix(1<<62, 0)

// idleMemoOf is the memo of a plan of t by p at now with nothing to do; nil
// when the policy leaves none (delete_unverified).
func idleMemoOf(t *lance.Table, p retention.Policy, now time.Time) *IdleMemo {
	if p.DeleteUnverified {
		return nil
	}
	m := &IdleMemo{policy: p, versions: lance.Fingerprint(t.VersionsListed()), quiet: forever, idle: forever, manifestsFor: t.ManifestsOnly()}
	if len(t.Tags)+len(t.Branches) > 0 {
		m.hasRefs, m.refs = true, lance.Fingerprint(t.RefsListed)
	}
	crosses := func(v lance.Version) time.Time {
		if !p.Before.IsZero() {
			return forever // the cutoff does not move
		}
		at := v.Timestamp
		if v.LastModified.After(at) {
			at = v.LastModified
		}
		return at.Add(p.OlderThan)
	}
	// Every version of main: once a version is written, any of them but
	// the new newest may go when it crosses (quiet). Without a write, only
	// those neither newest nor among the newest KeepVersions (idle); a
	// tagged one or a branch's root is watched through _refs/.
	watched := map[uint64]bool{} // kept by a ref: watched through _refs/
	for _, tg := range t.Tags {
		if tg.Branch == "" {
			watched[tg.Version] = true
		}
	}
	for _, b := range t.Branches {
		watched[b.RootVersion] = true
	}
	keepFrom := len(t.Versions) - max(p.KeepVersions, retention.DefaultKeepVersions)
	for i, v := range t.Versions {
		at := crosses(v)
		m.quiet = earliest(m.quiet, at)
		if i < keepFrom && i < len(t.Versions)-1 && !watched[v.Number] {
			m.idle = earliest(m.idle, at)
		}
	}
	// Orphan files (referenced by no manifest) go at unverified_after; a
	// file written after this read, no sooner than that from now.
	unverified := p.UnverifiedAfter
	if unverified == 0 {
		unverified = retention.DefaultUnverifiedAfter
	}
	at := now.Add(unverified)
	for _, lm := range retention.OrphanTimes(t) {
		at = earliest(at, lm.Add(unverified))
	}
	m.quiet, m.idle = earliest(m.quiet, at), earliest(m.idle, at)
	return m
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// StillIdle reports whether the table the memo was made of still has
// nothing to remove by policy p at now (the store's clock): with no
// request before the memo's quiet time, else with a listing of _versions/
// (and one of _refs/ when the table has refs) that fingerprints as before,
// before its idle time. A different policy, or a later time, is false.
func (ns *Namespace) StillIdle(ctx context.Context, name string, m *IdleMemo, p retention.Policy, now time.Time) (bool, error) {
	if m == nil || m.policy != p {
		return false, nil
	}
	if now.Before(m.quiet) {
		return true, nil
	}
	if !now.Before(m.idle) {
		return false, nil
	}
	dir := TableDir(name)
	objs, err := lance.ListVersions(ctx, ns.store, dir)
	if err != nil {
		return false, fmt.Errorf("retain %q: %w", name, err)
	}
	if lance.Fingerprint(objs) != m.versions {
		return false, nil
	}
	if m.hasRefs {
		refs, err := lance.ListRefs(ctx, ns.store, dir)
		if err != nil {
			return false, fmt.Errorf("retain %q: %w", name, err)
		}
		if lance.Fingerprint(refs) != m.refs {
			return false, nil
		}
	}
	return true, nil
}

// Manifests is the table as the memo's plan read it (its manifests), for
// the next read of the table when it changed (lance.ReadTableKnown).
func (m *IdleMemo) Manifests() *lance.Table {
	if m == nil {
		return nil
	}
	return m.manifestsFor
}

// Versions is how many versions the memo keeps the manifests of.
func (m *IdleMemo) Versions() int {
	if m == nil || m.manifestsFor == nil {
		return 0
	}
	return len(m.manifestsFor.Versions)
}

// DropManifests keeps the memo's times and fingerprints alone.
func (m *IdleMemo) DropManifests() { m.manifestsFor = nil }
