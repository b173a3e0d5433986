package worker

import (
	"slices"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/roots"
)

// This file owns which tables of a root a replica acts on when the
// replicas split tables (shard.by table, config.Shard.ByTable). Every
// replica visits every root and plans it whole, from the root's one
// listing; it purges its share of the due tables (roots.ShareOf: stable
// hashing of root and name), cleans its share of the live ones, and
// decides, logs, counts and records in the audit ledger its share alone,
// so the replicas' reports together hold each table once.
//
// What counts the whole root is judged on the whole plan in every
// replica, so all judge alike:
//   - the root's backlog (RootReport.Plan: the reaper_tables and oldest-due
//     gauges) is the whole root's;
//   - the blast radius counts the whole root's due tables against its
//     whole table count: a mass drop is refused in every replica, each
//     deciding its share refused (a replica judging its share alone would
//     see a part of the due tables and let a mass drop through). The TTL
//     floor judges each table and the pause each root, the same anywhere;
//   - version retention plans (reads) every live table of the root before
//     any runs, as an unsplit pass does (retain.go): a shallow clone in
//     another replica's share may read this share's files. Only this
//     share's plans run.
//
// The pass's limits (limits.max_*) are per replica, as they are per
// process. A table's lease still keeps two replicas off one table when
// their settings disagree (a rollout changing shard.by or shard.count).

// shareOf is this replica's share of the tables of the root at uri: every
// table unless the replicas split tables.
func (w *Worker) shareOf(uri string) roots.Share {
	if sh := w.Config.Shard; sh.ByTable() {
		return roots.ShareOf(uri, sh.Index, sh.Count)
	}
	return roots.Share{}
}

// keepShare drops from the plan the other replicas' tables among those it
// only reports (not due, held, invalid, busy, unpurgeable, a retention
// pass's unretainable) or sweeps (stale leases). The due and the live
// tables stay whole: the rails judge the root by its due tables
// (ownDue takes the share after them), and retention finds the root's
// clones among its live tables (ownsLive).
func (rp *rootPlan) keepShare(sh roots.Share) {
	if !sh.Split() {
		return
	}
	theirs := func(s lifecycle.TableStatus) bool { return !sh.Owns(s.Name) }
	rp.unpurgeable = slices.DeleteFunc(rp.unpurgeable, theirs)
	rp.held = slices.DeleteFunc(rp.held, theirs)
	rp.invalid = slices.DeleteFunc(rp.invalid, theirs)
	rp.busy = slices.DeleteFunc(rp.busy, theirs)
	rp.notDueFull = slices.DeleteFunc(rp.notDueFull, theirs)
	rp.unretainable = slices.DeleteFunc(rp.unretainable, theirs)
	rp.leaseOnly = slices.DeleteFunc(rp.leaseOnly, func(name string) bool { return !sh.Owns(name) })
	var mine briefList
	for i := range rp.notDue.len() {
		if b := rp.notDue.at(i); sh.Owns(b.name) {
			mine.add(*b)
		}
	}
	rp.notDue = mine
}

// ownDue is the share's due tables among due, in due's order.
func ownDue(sh roots.Share, due *dueList) *dueList {
	if !sh.Split() || due == nil {
		return due
	}
	return due.filter(func(s lifecycle.TableStatus) bool { return sh.Owns(s.Name) })
}

// ownsLive counts the share's tables among live.
func ownsLive(sh roots.Share, live []liveTable) int {
	n := 0
	for _, t := range live {
		if sh.Owns(t.name) {
			n++
		}
	}
	return n
}
