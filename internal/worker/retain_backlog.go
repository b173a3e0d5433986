package worker

import (
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns what version retention leaves behind on a root: the
// backlog, what the pass's plans of its live tables would still remove once
// the pass is over (reaper_retention_reclaimable_*). A pass plans every live
// table before it runs any (retain.go), dry run or not, so every pass that
// plans a root knows its backlog: the plans, less what the runs removed. A
// dry run removes nothing; a pass that cleaned the root leaves next to
// nothing, so a dashboard sees what old versions cost before retention is
// switched on and after.

// Backlog is what version retention would remove: versions, and the bytes
// of the files.
type Backlog struct {
	Versions int
	Bytes    int64
}

// backlogOf is what a table's plan would remove (nothing for a plan that
// failed or a table reaper refuses).
func backlogOf(pl lifecycle.RetentionPlan, err error) Backlog {
	if err != nil || (pl.Result != lifecycle.RetentionPlanned && pl.Result != lifecycle.RetentionNothingToDo) {
		return Backlog{}
	}
	return Backlog{Versions: len(pl.Plan.Removed), Bytes: pl.Plan.Bytes}
}

// less is b less what a run removed, never below zero: a run may remove
// less than planned (a version tagged since stays) or more (a record's
// files).
func (b Backlog) less(versions int, bytes int64) Backlog {
	return Backlog{Versions: max(b.Versions-versions, 0), Bytes: max(b.Bytes-bytes, 0)}
}

// RetentionBacklog is what the pass's retention plans of the root's live
// tables (this replica's share of them) would still remove once the pass
// is over. ok is false when the pass did not plan every one of them:
// retention is off there, the pass named its tables, the root was paused,
// refused or its policy below the floor, or a shutdown left tables unvisited.
func (rr *RootReport) RetentionBacklog() (b Backlog, ok bool) {
	if !rr.retainOn || !rr.retentionPlanned || rr.RetentionNotVisited > 0 {
		return Backlog{}, false
	}
	for _, d := range rr.Retention {
		b.Versions += d.Left.Versions
		b.Bytes += d.Left.Bytes
	}
	return b, true
}

// idleTables counts the root's live tables retention found nothing to do
// in: they get no audit ledger row of their own (retain.go), the root's
// summary row counts them.
func (rr *RootReport) idleTables() int {
	n := 0
	for _, d := range rr.Retention {
		if d.Action == outcome.Skipped && d.Reason == outcome.ReasonNothingToDo {
			n++
		}
	}
	return n
}
