package worker

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/roots"
)

// This file owns what a pass keeps of a root's plan. The plan streams
// (lifecycle.PlanEach): the pass keeps the due tables whole (it purges
// them), the few names it reports with a problem (held, invalid, busy,
// named and unpurgeable) whole too, the tables not due yet as briefs
// (brief.go), and of the live tables only their count. A root of a
// million names not due costs a pass its briefs, not a million statuses.

// rootPlan is one root's plan as a pass keeps it.
type rootPlan struct {
	now     time.Time
	summary PlanSummary
	// due, oldest purge_after first (due.go); the other lists by name.
	due                              *dueList
	unpurgeable, held, invalid, busy []lifecycle.TableStatus
	// notDue are the not-due tables kept as briefs (decided, they are the
	// report's), notDueFull those a brief cannot carry (a stale commit's
	// problem).
	notDue     briefList
	notDueFull []lifecycle.TableStatus
	leaseOnly  []string
	// live are the live tables retention runs on (rule), kept only for
	// it: a root without it keeps their count alone.
	live []liveTable
	rule retentionRule
	// retainOnly: a retention pass (RetainOnly) keeps only the live
	// tables and, when the pass names its tables (named), the named ones
	// that are not live (unretainable), to report.
	retainOnly, named bool
	unretainable      []lifecycle.TableStatus
	// defaultTTL is the TTL of markers that carry none (briefs).
	defaultTTL time.Duration
}

// planRoot plans one root. A plan that fails keeps nothing.
func (p *pass) planRoot(ctx context.Context, ns *lifecycle.Namespace, root roots.Root) (*rootPlan, error) {
	def := ns.Options().DefaultTTL
	rp := &rootPlan{defaultTTL: def, due: &dueList{def: def}, rule: p.w.retentionFor(root),
		retainOnly: p.w.Kind == RetainOnly, named: len(p.w.Tables) > 0}
	// The plan is judged by the store's clock; this host's clock takes no
	// part in whether a table is due. A discovered root is planned from
	// discovery's listing of this pass (nil for a configured root).
	info, err := ns.PlanEach(ctx, root.Listing, time.Time{}, p.w.Tables, func(c lifecycle.PlanClass, s lifecycle.TableStatus) error {
		rp.add(c, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rp.now, rp.leaseOnly = info.Now, info.LeaseOnly
	byName := func(a, b lifecycle.TableStatus) int { return strings.Compare(a.Name, b.Name) }
	for _, l := range [][]lifecycle.TableStatus{rp.unpurgeable, rp.held, rp.invalid, rp.busy, rp.notDueFull} {
		slices.SortFunc(l, byName)
	}
	sortBriefs(&rp.notDue)
	rp.due.sort()
	rp.summary.countDue(rp.due, rp.now)
	return rp, nil
}

// liveTable is a live table of a root's plan, kept for version
// retention with its policy: record says the listing showed a retention
// record beside it.
type liveTable struct {
	name   string
	record bool
	policy retention.Policy
}

// keepLive keeps s for version retention when its retention is on.
func (rp *rootPlan) keepLive(s lifecycle.TableStatus) {
	if policy, on := rp.rule.forTable(s.Name); on {
		rp.live = append(rp.live, liveTable{name: s.Name, record: s.RetainRecord, policy: policy})
	}
}

// add keeps one name of the plan and counts it.
func (rp *rootPlan) add(c lifecycle.PlanClass, s lifecycle.TableStatus) {
	if rp.retainOnly {
		rp.addRetainOnly(c, s)
		return
	}
	switch c {
	case lifecycle.PlanDue:
		rp.due.add(s)
	case lifecycle.PlanNotDue:
		if b, ok := briefOf(s, rp.defaultTTL); ok {
			rp.notDue.add(b)
		} else {
			rp.notDueFull = append(rp.notDueFull, s)
		}
	case lifecycle.PlanInvalid:
		rp.invalid = append(rp.invalid, s)
	case lifecycle.PlanBusy:
		rp.busy = append(rp.busy, s)
	case lifecycle.PlanHeld:
		rp.held = append(rp.held, s)
		rp.summary.Held++
	case lifecycle.PlanLive:
		rp.keepLive(s)
	case lifecycle.PlanUnpurgeable:
		rp.unpurgeable = append(rp.unpurgeable, s)
		if s.State != lifecycle.StateExists {
			return // not a table of the root: not counted
		}
	}
	rp.summary.count(s)
}

// addRetainOnly keeps one name of a retention pass's plan: a live table
// (named or not), or a named table that is not live, to report; soft-deleted
// tables are left to purges and counted only.
func (rp *rootPlan) addRetainOnly(c lifecycle.PlanClass, s lifecycle.TableStatus) {
	live := s.Marker == nil && s.State == lifecycle.StateExists
	switch {
	case live && (c == lifecycle.PlanLive || c == lifecycle.PlanUnpurgeable):
		rp.keepLive(s)
	case rp.named:
		rp.unretainable = append(rp.unretainable, s)
	}
	// The backlog is counted as a purge pass counts it, so the metrics of
	// a retention pass say the same of the root.
	switch c {
	case lifecycle.PlanDue:
		rp.due.add(s)
	case lifecycle.PlanHeld:
		rp.summary.Held++
	case lifecycle.PlanUnpurgeable:
		if !live {
			return // not found: not a table of the root, not counted
		}
	}
	rp.summary.count(s)
}

// plan is what the pass hands its observers (RootPlanned): the stale
// leases and the time. Its tables are in the summary (RootReport.Plan),
// then in the decisions; the pass keeps no list of statuses to hand over.
func (rp *rootPlan) plan() lifecycle.Plan {
	return lifecycle.Plan{LeaseOnly: rp.leaseOnly, Now: rp.now}
}
