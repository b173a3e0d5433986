package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// The safety rails of a pass, in the order each pass applies them. A new
// rail is one entry in one of these lists plus its tests (rails_test.go).
//
// Legal holds and invalid or future-dated markers are not here: lifecycle
// keeps them out of a plan's due tables and checks them again under the
// lease, and the pass only reports them.

// rootRails run over a root's due tables after planning and before any
// purge, each over the tables the rails before it let through.
var rootRails = []rootRail{
	{outcome.ReasonShortTTL, shortTTLRail},
	{outcome.ReasonPaused, pauseRail},
	{outcome.ReasonBlastRadius, blastRadiusRail},
}

// startRails run just before each table's purge starts; the first that
// holds a table back decides it.
var startRails = []startRail{
	{outcome.ReasonShutdown, shutdownRail},
	{outcome.ReasonDeadline, deadlineRail},
	{outcome.ReasonLimit, budgetRail}, // last: it spends the budget
}

// walkRails run once a table's purge has walked it (lifecycle's identity
// fence), before anything is recorded, committed or deleted: what they
// judge is the table's size. The first that holds the table back decides
// it; nothing of it was touched. A purge that had committed already is
// finished without them (lifecycle.PurgeOptions.AfterWalk).
var walkRails = []walkRail{
	{outcome.ReasonTooLarge, tooLargeRail},
}

// rootRail holds back due tables of one root.
type rootRail struct {
	reason outcome.Reason
	// apply returns the tables it lets through and the decision of each it
	// holds back; refuse, when not nil, refuses the root: every due table
	// is decided as refuse says (its action and detail), no later rail
	// runs and nothing is purged.
	apply func(rc *railContext, due *dueList) (kept *dueList, held []Decision, refuse *Decision)
}

// startRail holds back one table about to start.
type startRail struct {
	reason outcome.Reason
	// hold returns why the table must not start now, or "" to let it
	// through; it may fill t with what it grants.
	hold func(ctx context.Context, p *pass, t *ticket) string
}

// walkRail holds back one walked table.
type walkRail struct {
	reason outcome.Reason
	// hold returns why the table must not be purged, or "" to let it
	// through; objects and bytes are what the purge would delete.
	hold func(p *pass, s lifecycle.TableStatus, objects, bytes int64) string
}

// railContext is what the root rails see.
type railContext struct {
	ctx    context.Context
	p      *pass
	ns     *lifecycle.Namespace
	rr     *RootReport
	log    *slog.Logger
	safety config.Safety
	// paused is readPause's answer, read before the root was planned.
	paused string
}

// ticket is what the start rails grant a table.
type ticket struct {
	status lifecycle.TableStatus
	// maxObjects is the table's object budget (0 = unlimited).
	maxObjects int64
}

// applyRootRails runs rootRails in order over the root's due tables and
// returns this replica's share of the tables left to purge; nil when a
// rail refused the root. The rails judge the whole root in every replica;
// each decides its share (share.go).
func applyRootRails(rc *railContext, due *dueList) *dueList {
	sh := rc.rr.share
	for _, r := range rootRails {
		kept, held, refuse := r.apply(rc, due)
		for _, d := range held {
			if d.Reason == "" {
				d.Reason = r.reason
			}
			if sh.Owns(d.Table) {
				rc.p.decide(rc.rr, d)
			}
		}
		if refuse != nil {
			// One decision at a time: a mass drop refuses every table.
			for s := range due.all {
				if !sh.Owns(s.Name) {
					continue
				}
				d := *refuse
				d.Table, d.Reason, d.Status = s.Name, r.reason, s
				rc.p.decide(rc.rr, d)
			}
			rc.rr.Refused = r.reason
			return nil
		}
		due = kept
	}
	return ownDue(sh, due)
}

// applyStartRails returns the decision of a table a start rail holds back,
// or false when the table may start.
func applyStartRails(ctx context.Context, p *pass, t *ticket) (Decision, bool) {
	for _, r := range startRails {
		if why := r.hold(ctx, p, t); why != "" {
			return Decision{Table: t.status.Name, Action: outcome.Skipped, Reason: r.reason, Detail: why, Status: t.status}, true
		}
	}
	return Decision{}, false
}

// heldAfterWalk is the error a walk rail stops a purge with.
type heldAfterWalk struct {
	reason outcome.Reason
	why    string
}

func (h *heldAfterWalk) Error() string { return h.why }

// applyWalkRails is the purge's AfterWalk hook for s: the first walk rail
// that holds the table back stops its purge.
func applyWalkRails(p *pass, s lifecycle.TableStatus) func(ctx context.Context, objects, bytes int64) error {
	return func(_ context.Context, objects, bytes int64) error {
		for _, r := range walkRails {
			if why := r.hold(p, s, objects, bytes); why != "" {
				return &heldAfterWalk{reason: r.reason, why: why}
			}
		}
		return nil
	}
}

// shortTTLRail skips markers whose TTL is below safety.min_ttl unless
// safety.allow_short_ttl: lifecycle.BelowTTLFloor says which.
func shortTTLRail(rc *railContext, due *dueList) (*dueList, []Decision, *Decision) {
	var held []Decision
	floor := rc.safety.MinTTL.D()
	kept := due.filter(func(s lifecycle.TableStatus) bool {
		if !rc.safety.AllowShortTTL && lifecycle.BelowTTLFloor(s, floor) {
			held = append(held, Decision{Table: s.Name, Action: outcome.Skipped, Status: s,
				Detail: fmt.Sprintf("ttl %s is below safety.min_ttl %s; pass --allow-short-ttl or set safety.allow_short_ttl to purge it", s.TTL, floor)})
			return false
		}
		return true
	})
	return kept, held, nil
}

// tooLargeRail skips a table whose walk found more bytes than
// safety.max_table_bytes: a purge that large is for a person to start.
func tooLargeRail(p *pass, _ lifecycle.TableStatus, objects, bytes int64) string {
	limit := p.w.Config.Safety.MaxTableBytes
	if limit <= 0 || bytes <= limit {
		return ""
	}
	return fmt.Sprintf("%d bytes in %d objects, more than safety.max_table_bytes (%d); nothing was deleted", bytes, objects, limit)
}

// pauseRail refuses a paused root: why is what readPause found before the
// root was planned. Each purge also re-reads PAUSE before every batch.
func pauseRail(rc *railContext, due *dueList) (*dueList, []Decision, *Decision) {
	why := rc.paused
	if why == "" {
		return due, nil, nil
	}
	rc.log.Warn("root paused: nothing purged", "why", why, "due", due.len())
	return nil, nil, &Decision{Action: outcome.Skipped, Detail: why}
}

// readPause says why the root is paused, "" when it is not: the config
// switch or the root's PAUSE object (file or folder form). An error reading
// it pauses too: fail closed. A pass reads it first, before planning the
// root: it then precedes any purge of the root, and on S3 its answer dates
// the store's clock the plan is judged by, so a plan made from discovery's
// listing sends no request of its own (lifecycle/listing.go). A root the
// settings cannot reach (objstore.ErrMisconfigured: an endpoint that
// refuses connections or does not resolve, no credentials) is the error:
// the pass stops there, where planning would try the same store again.
func readPause(ctx context.Context, p *pass, ns *lifecycle.Namespace) (string, error) {
	if p.w.Config.Paused {
		return "paused by configuration (paused: true, REAPER_PAUSED=true or --set paused=true)", nil
	}
	why, err := ns.Paused(ctx)
	switch {
	case errors.Is(err, objstore.ErrMisconfigured):
		return "", err
	case err != nil:
		return "cannot read " + PauseKey + " (" + err.Error() + "); treated as paused", nil
	}
	return why, nil
}

// blastRadiusRail refuses a root where too many tables are due at once:
// a mass drop by mistake must not become a mass purge.
func blastRadiusRail(rc *railContext, due *dueList) (*dueList, []Decision, *Decision) {
	why := blastRadius(rc.safety, uncommitted(due), rc.rr.Plan.Tables)
	if why == "" {
		return due, nil, nil
	}
	rc.log.Error("ROOT REFUSED: blast radius exceeded; nothing purged. Raise safety.blast_radius_* or set safety.confirm_blast_radius for one pass after checking the drops",
		"due", due.len(), "tables", rc.rr.Plan.Tables, "why", why)
	return nil, nil, &Decision{Action: outcome.Refused, Detail: why}
}

// uncommitted counts the due tables whose purge has not committed yet:
// the blast radius guards decisions still to be taken.
func uncommitted(due *dueList) int {
	n := 0
	for s := range due.all {
		if s.Commit == nil {
			n++
		}
	}
	return n
}

// blastRadius returns why a root must be refused, or "".
func blastRadius(s config.Safety, due, tables int) string {
	if s.ConfirmBlastRadius || due == 0 {
		return ""
	}
	if s.BlastRadiusMaxTables > 0 && due > s.BlastRadiusMaxTables {
		return fmt.Sprintf("%d tables due, more than safety.blast_radius_max_tables (%d)", due, s.BlastRadiusMaxTables)
	}
	if s.BlastRadiusMaxPercent > 0 && tables >= s.BlastRadiusMinTables && tables > 0 {
		if pct := 100 * float64(due) / float64(tables); pct > s.BlastRadiusMaxPercent {
			return fmt.Sprintf("%d of %d tables due (%.0f%%), more than safety.blast_radius_max_percent (%.0f%%)", due, tables, pct, s.BlastRadiusMaxPercent)
		}
	}
	return ""
}

// shutdownRail starts no table once shutdown has begun (draining, or the
// pass's context cancelled); a drain marks the pass interrupted.
func shutdownRail(ctx context.Context, p *pass, _ *ticket) string {
	if p.draining() {
		p.rep.Interrupted = true
	} else if ctx.Err() == nil || errors.Is(context.Cause(ctx), errPassDeadline) {
		return ""
	}
	return "not started; the next pass purges it"
}

// deadlineRail starts no table once limits.max_pass_duration is spent.
func deadlineRail(ctx context.Context, _ *pass, _ *ticket) string {
	if errors.Is(context.Cause(ctx), errPassDeadline) {
		return "limits.max_pass_duration reached: not started; the next pass purges it"
	}
	return ""
}

// budgetRail reserves the table against limits.max_tables_per_pass and
// max_objects_per_pass and grants its object budget.
func budgetRail(_ context.Context, p *pass, t *ticket) string {
	maxObjects, ok := p.budget.takeTable(p.w.Config.Limits.MaxObjectsPerTable)
	if !ok {
		return "pass limit reached (limits.max_tables_per_pass / max_objects_per_pass); the next pass purges it"
	}
	t.maxObjects = maxObjects
	return ""
}
