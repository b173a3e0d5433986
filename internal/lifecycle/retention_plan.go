package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns which tables of a root version retention plans, and how a
// plan is reported: only live tables (data and no marker: a soft-deleted
// table is left to its purge), each read by internal/lance and planned by
// internal/retention with the store's clock. It deletes nothing.

// RetentionResult is what planning did with one table.
type RetentionResult string

const (
	// RetentionPlanned: the plan removes versions or files.
	RetentionPlanned RetentionResult = "planned"
	// RetentionNothingToDo: nothing is old enough to remove.
	RetentionNothingToDo RetentionResult = "nothing_to_do"
	// RetentionUnsupported: the reader does not fully understand the
	// table; nothing of it is ever planned (Reason says why).
	RetentionUnsupported RetentionResult = "unsupported"
	// RetentionFailed: the table could not be read, or is not a live
	// table (Reason says why).
	RetentionFailed RetentionResult = "failed"
)

// RetentionPlan is one table's plan. File keys are relative to the root
// (<name>.lance/...).
type RetentionPlan struct {
	Name   string
	Result RetentionResult
	// Reason explains unsupported and failed.
	Reason string
	// Versions is how many versions of main the table had.
	Versions int
	Plan     retention.Plan
	// Record is set when a retention record was found beside the table:
	// its files still true are in Plan.Files (WhyRecorded), the rest of it
	// is dropped by the run (retain_record.go).
	Record *RecordInfo
	// Now is the store's clock the plan was judged at.
	Now time.Time
	// Bases, for a table refused for its base paths (a shallow clone), are
	// what it reads of other locations (retain_clones.go).
	Bases []lance.BaseRef
	// KeptForOthers counts the files the plan keeps because other tables
	// of the root (KeptFor, by name) read them through base paths.
	KeptForOthers int
	KeptFor       string
	// Memo, on a plan with nothing to do, is what the next pass of the same
	// process needs to tell the table is still idle (retain_idle.go);
	// Unchanged: this plan is such a pass's, nothing read.
	Memo      *IdleMemo
	Unchanged bool
	// Shedded: the plan's lists were dropped (Shed); plan it again to run
	// it.
	Shedded bool
	// table is the table as read for the plan: a run that executes the
	// plan reads only what changed since (lance.Table.Refresh).
	table *lance.Table
	// err is why the plan failed or is unsupported, whole (a cancelled
	// context, a lost lease), for a run to classify.
	err error
}

// Shed drops the plan's lists, keeping that it has something to do: a
// caller holding many plans at once sheds some to bound its memory and
// plans those tables again, by the same planner, when it runs them.
func (rp *RetentionPlan) Shed() {
	rp.Shedded = true
	rp.table = nil
	rp.Plan = retention.Plan{Dir: rp.Plan.Dir, Cutoff: rp.Plan.Cutoff}
}

// Err is why the plan failed or is unsupported, whole (nil otherwise).
func (rp *RetentionPlan) Err() error { return rp.err }

// Forget drops what the plan keeps for a run that executes it (the table
// as read): a plan kept for a report costs its lists only.
func (rp *RetentionPlan) Forget() { rp.table = nil }

// DefaultRetentionReads bounds how many tables PlanRetention reads at once
// (each reads lance.ReadConcurrency manifests at once).
const DefaultRetentionReads = 4

// PlanRetention plans policy p on the named tables, or on every live table
// of the root: one listing of the root, then each table read once, by the
// store's clock. A named table that is not live is reported failed (a
// soft-deleted table is left to its purge). The error is for the root as a
// whole; per-table problems are in the results.
func (ns *Namespace) PlanRetention(ctx context.Context, p retention.Policy, names ...string) ([]RetentionPlan, error) {
	return ns.PlanRetentionEach(ctx, p, nil, names...)
}

// PlanRetentionEach is PlanRetention that also hands each table's plan to
// each, if set, once every table is planned (a shallow clone's reads are
// known then), in the root's order.
func (ns *Namespace) PlanRetentionEach(ctx context.Context, p retention.Policy, each func(RetentionPlan), names ...string) ([]RetentionPlan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// The root's listing and markers only: the written-after-drop check
	// of Status concerns soft-deleted tables, which retention leaves.
	sts, err := ns.collect(ctx, names, false)
	if err != nil {
		return nil, err
	}
	now, err := ns.storeNow(ctx)
	if err != nil {
		return nil, err
	}
	var out []RetentionPlan
	for _, s := range sts {
		if why := notRetainable(s); why != "" {
			if len(names) > 0 {
				out = append(out, RetentionPlan{Name: s.Name, Result: RetentionFailed, Reason: why})
			}
			continue
		}
		out = append(out, RetentionPlan{Name: s.Name, Record: recordSeen(s)})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultRetentionReads)
	for i := range out {
		if out[i].Result != "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = ns.planTable(ctx, out[i].Name, p, now, out[i].Record != nil)
			out[i].Forget()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// What shallow clones of the root read of a table is kept: known once
	// every table was read (retain_clones.go). Of named tables, only the
	// named ones are read: name the clones too, or plan the whole root.
	protected := ns.ProtectedBy(out)
	for i := range out {
		out[i].Protect(protected[out[i].Name])
		if each != nil {
			each(out[i])
		}
	}
	return out, nil
}

// NotRetainable says why version retention leaves a table ("" when it is a
// live table it plans).
func NotRetainable(s TableStatus) string { return notRetainable(s) }

// notRetainable says why a table is not planned ("" when it is).
func notRetainable(s TableStatus) string {
	switch {
	case s.State == StateExists:
		return ""
	case s.Marker != nil || s.Commit != nil:
		return "soft-deleted: left to its purge"
	case s.State == StateNotFound:
		return "not found: no data"
	}
	return fmt.Sprintf("not a live table (%s)", s.State)
}

// recordSeen is a placeholder RecordInfo for a status whose listing shows
// a retention record (nil without one): the plan reads the record.
func recordSeen(s TableStatus) *RecordInfo {
	if !s.RetainRecord {
		return nil
	}
	return &RecordInfo{}
}

// TablePlanOptions are what a caller's own listing of the root says of a
// table it plans (PlanTableRetention).
type TablePlanOptions struct {
	// Now is the store's clock of that listing: the plan is judged at it.
	Now time.Time
	// Record: the listing showed a retention record beside the table
	// (TableStatus.RetainRecord); the plan reads it.
	Record bool
	// Memo is what the same process's last plan of the table left
	// (RetentionPlan.Memo): a table still idle by it is not read
	// (retain_idle.go), and one that changed is read with its manifests
	// taken from the memo where they are the same objects.
	Memo *IdleMemo
}

// PlanTableRetention plans one table a caller's own listing found live,
// without listing the root again: a pass plans each live table of its plan
// so, and a run executes the plan (RetainOptions.Plan). Deletes nothing.
func (ns *Namespace) PlanTableRetention(ctx context.Context, p retention.Policy, name string, o TablePlanOptions) (RetentionPlan, error) {
	if err := p.Validate(); err != nil {
		return RetentionPlan{}, err
	}
	if err := ValidateName(name); err != nil {
		return RetentionPlan{}, err
	}
	if !o.Record {
		idle, err := ns.StillIdle(ctx, name, o.Memo, p, o.Now)
		switch {
		case err != nil:
			return RetentionPlan{Name: name, Now: o.Now, Result: RetentionFailed, Reason: err.Error(), err: err}, nil
		case idle:
			// Unchanged since its last plan: nothing to do, nothing read.
			return RetentionPlan{Name: name, Now: o.Now, Result: RetentionNothingToDo, Memo: o.Memo, Unchanged: true}, nil
		}
	}
	return ns.planTableFrom(ctx, name, p, o.Now, o.Record, o.Memo.Manifests()), nil
}

// planTable reads and plans one table, and the record beside it when
// record says there is one. Under a table's lease ctx is the fenced one.
func (ns *Namespace) planTable(ctx context.Context, name string, p retention.Policy, now time.Time, record bool) RetentionPlan {
	return ns.planTableFrom(ctx, name, p, now, record, nil)
}

// planTableFrom is planTable taking what manifests it can from prev, the
// table read earlier (nil: none).
func (ns *Namespace) planTableFrom(ctx context.Context, name string, p retention.Policy, now time.Time, record bool, prev *lance.Table) RetentionPlan {
	ctx = withTable(ctx, name)
	rp := RetentionPlan{Name: name, Now: now}
	var rec *retainRecord
	var recObj objstore.Object
	if record {
		var err error
		if rec, recObj, err = ns.readRetainRecord(ctx, name); err != nil {
			rp.Result, rp.Reason, rp.err = RetentionFailed, err.Error(), err
			return rp
		}
	}
	t, err := lance.ReadTableKnown(ctx, ns.store, TableDir(name), prev)
	var ue *lance.UnsupportedError
	switch {
	case errors.As(err, &ue):
		rp.Result, rp.Reason, rp.err, rp.Bases = RetentionUnsupported, ue.Reason, err, ue.Bases
		return rp
	case err != nil:
		rp.Result, rp.Reason, rp.err = RetentionFailed, err.Error(), err
		return rp
	}
	rp.Versions = len(t.Versions)
	plan, err := retention.Compute(t, p, now)
	if err != nil {
		rp.Result, rp.Reason, rp.err = RetentionFailed, err.Error(), err
		return rp
	}
	if rec != nil {
		rp.Record = withRecord(&plan, t, rec, recObj.ETag)
	}
	rp.table = t
	for i := range plan.Files {
		plan.Files[i].Key = TableDir(name) + strings.TrimPrefix(plan.Files[i].Key, "/")
	}
	slices.SortFunc(plan.Files, func(a, b retention.File) int { return strings.Compare(a.Key, b.Key) })
	rp.Plan = plan
	rp.Result = RetentionNothingToDo
	if len(plan.Files) > 0 || len(plan.Removed) > 0 {
		rp.Result = RetentionPlanned
	} else if rec == nil {
		rp.Memo = idleMemoOf(t, p, now)
	}
	return rp
}
