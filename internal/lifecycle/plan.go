package lifecycle

import (
	"context"
	"slices"
	"strings"
	"time"
)

// This file owns how a plan classifies the names of a root: which are due,
// not due, invalid, busy, held, unpurgeable or live.

// Plan splits a root into what a purge pass would do at now.
type Plan struct {
	// Due are purgeable tables (and orphan markers), oldest purge_after first.
	Due []TableStatus
	// NotDue are soft-deleted tables whose TTL has not passed.
	NotDue []TableStatus
	// Invalid are invalid, unreadable or future-dated markers, names that
	// are not tables and stuck purges without a marker: reported, never
	// purged.
	Invalid []TableStatus
	// Busy are tables whose lease is held by another process.
	Busy []TableStatus
	// Held are soft-deleted tables under a legal hold: never purged.
	Held []TableStatus
	// Unpurgeable are names given to PlanPurge that have no marker: live
	// (exists) or unknown (not_found).
	Unpurgeable []TableStatus
	// Live are tables with data and no marker (they count toward the
	// blast-radius percentage).
	Live []TableStatus
	// LeaseOnly are names that had a lease and no marker when the root was
	// listed: what SweepStaleLeases may find left behind by a dead process.
	LeaseOnly []string
	// Now is the time the plan was judged at: the store's clock when the
	// root's first name was complete (or the caller's now, when that was
	// earlier).
	Now time.Time
}

// PlanClass is the list of a Plan a name belongs to.
type PlanClass int

const (
	// PlanIgnored: a link or file named <name>.lance with no marker beside
	// it (nobody asked to purge it), or a lone lease.
	PlanIgnored PlanClass = iota
	PlanDue
	PlanNotDue
	PlanInvalid
	PlanBusy
	PlanHeld
	// PlanUnpurgeable: a named table without a marker; a live one (state
	// exists) is in Plan.Live too.
	PlanUnpurgeable
	PlanLive
)

// PlanInfo is what a plan learned beside its names.
type PlanInfo struct {
	// Now and LeaseOnly are Plan's.
	Now       time.Time
	LeaseOnly []string
}

// ListPurgeable returns the soft-deleted tables due by the store's clock,
// oldest first (see PlanPurge for now). Future-dated and invalid markers are
// never included; PlanPurge reports them.
func (ns *Namespace) ListPurgeable(ctx context.Context, now time.Time) ([]TableStatus, error) {
	p, err := ns.PlanPurge(ctx, now)
	return p.Due, err
}

// PlanPurge classifies every marker of the root by the store's clock. A
// non-zero now earlier than the store's clock judges at now instead: a
// caller can make the plan stricter, never let it purge earlier than the
// store's clock allows. names, when given, limits the plan to those tables.
func (ns *Namespace) PlanPurge(ctx context.Context, now time.Time, names ...string) (Plan, error) {
	return ns.PlanPurgeFrom(ctx, nil, now, names...)
}

// PlanPurgeFrom is PlanPurge planned from listed, a complete listing of
// this root read earlier in the same pass (by discovery), instead of
// listing the root again; nil lists it. See listing.go for why that is
// safe.
func (ns *Namespace) PlanPurgeFrom(ctx context.Context, listed *Listing, now time.Time, names ...string) (Plan, error) {
	var p Plan
	info, err := ns.PlanEach(ctx, listed, now, names, func(c PlanClass, s TableStatus) error {
		p.add(c, s)
		return nil
	})
	if err != nil {
		return Plan{}, err
	}
	p.Now, p.LeaseOnly = info.Now, info.LeaseOnly
	for _, l := range [][]TableStatus{p.NotDue, p.Invalid, p.Busy, p.Held, p.Unpurgeable, p.Live} {
		slices.SortFunc(l, func(a, b TableStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(p.Due, CompareDue)
	return p, nil
}

// PlanEach is PlanPurgeFrom without the lists: fn receives each name with
// its class as soon as the root's listing has passed it, in no particular
// order (scan.go), so a plan of a root of millions of names holds what fn
// keeps of it, not the root. An error from fn stops the plan and is
// returned; a plan that fails has handed fn names before the failure,
// which the caller must drop.
func (ns *Namespace) PlanEach(ctx context.Context, listed *Listing, now time.Time, names []string, fn func(PlanClass, TableStatus) error) (PlanInfo, error) {
	judged := func(storeNow time.Time) time.Time {
		if now.IsZero() || storeNow.Before(now) {
			return storeNow
		}
		return now
	}
	named := len(names) > 0
	res, err := ns.scan(ctx, listed, names, completionOrder, scanPlan, func(s TableStatus, storeNow time.Time) error {
		c := classify(s, judged(storeNow), named)
		if c == PlanIgnored {
			return nil
		}
		return fn(c, s)
	})
	if err != nil {
		return PlanInfo{}, err
	}
	return PlanInfo{Now: judged(res.now), LeaseOnly: res.leaseOnly}, nil
}

// classify is the class of s in a plan judged at now; named: the caller
// named the tables it plans.
func classify(s TableStatus, now time.Time, named bool) PlanClass {
	switch {
	case s.State == StateNotATable && s.MarkerETag == "":
		// A link with no marker beside it: nobody asked to purge it.
		return PlanIgnored
	case s.State == StateInvalidMarker || s.State == StateUnreadable || s.State == StateNotATable || s.FutureDated,
		s.State == StateStuck && s.Marker == nil:
		return PlanInvalid
	case s.Marker == nil && named:
		return PlanUnpurgeable
	case s.Marker == nil && s.State == StateExists:
		return PlanLive
	case s.Marker == nil:
		return PlanIgnored
	case s.Hold != nil:
		return PlanHeld
	case s.State == StatePurging:
		return PlanBusy
	case s.Due(now):
		return PlanDue
	}
	return PlanNotDue
}

// add puts s in the list of its class.
func (p *Plan) add(c PlanClass, s TableStatus) {
	switch c {
	case PlanDue:
		p.Due = append(p.Due, s)
	case PlanNotDue:
		p.NotDue = append(p.NotDue, s)
	case PlanInvalid:
		p.Invalid = append(p.Invalid, s)
	case PlanBusy:
		p.Busy = append(p.Busy, s)
	case PlanHeld:
		p.Held = append(p.Held, s)
	case PlanUnpurgeable:
		if s.State == StateExists {
			p.Live = append(p.Live, s)
		}
		p.Unpurgeable = append(p.Unpurgeable, s)
	case PlanLive:
		p.Live = append(p.Live, s)
	}
}

// CompareDue orders due tables as a pass purges them: oldest purge_after
// first, then by name.
func CompareDue(a, b TableStatus) int {
	if c := a.PurgeAfter.Compare(b.PurgeAfter); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
