package worker

import (
	"slices"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns how a report keeps its routine decisions: those that did
// no work on a table and say the same of many: not due yet (most names of
// a big root, every pass), or kept back with the whole root (paused,
// blast_radius) or by the pass's limits (limit, shutdown, deadline). A
// full Decision (its TableStatus, times and strings) is some 500 bytes; a
// brief keeps what the decision is rebuilt from in under 100: the table's
// name, marker and times, and an index into the root's few kinds of
// decision (action, reason, detail). The rebuilt decision is the one the
// observers received, less the Status's MarkerModified and MarkerETag (a
// purge's concern, not a report's). Decisions with an error, a problem, a
// lease or work done stay whole (RootReport.Decisions).

// brief is one routine decision of a report.
type brief struct {
	name       string
	marker     lifecycle.Marker
	ttl        time.Duration
	purgeAfter time.Time
	// at is when the decision was made (Started = Finished), Unix
	// nanoseconds.
	at      int64
	kind    uint8 // index into RootReport.kinds
	orphan  bool  // orphan_marker, else soft_deleted
	hasData bool
}

// briefKind is what a brief's decision says. A not-due decision's detail
// is derived from its table's purge_after (detail "" here).
type briefKind struct {
	action outcome.Action
	reason outcome.Reason
	detail string
}

// maxKinds is how many kinds one root's briefs may have: a decision of
// another kind is kept whole.
const maxKinds = 256

// routineReasons are the reasons a routine decision may have.
var routineReasons = []outcome.Reason{outcome.ReasonNotDue, outcome.ReasonPaused, outcome.ReasonBlastRadius,
	outcome.ReasonLimit, outcome.ReasonShutdown, outcome.ReasonDeadline}

// briefOf keeps a table as a brief, when nothing of it but its name,
// marker and times would be lost (ok false otherwise: a problem to report,
// a lease, a hold, a commit, an unusual state).
func briefOf(s lifecycle.TableStatus) (brief, bool) {
	if s.Marker == nil || s.Problem != "" || s.FutureDated || s.Lease != nil || s.Hold != nil || s.Commit != nil ||
		(s.State != lifecycle.StateSoftDeleted && s.State != lifecycle.StateOrphanMarker) {
		return brief{}, false
	}
	return brief{name: s.Name, marker: *s.Marker, ttl: s.TTL, purgeAfter: s.PurgeAfter,
		orphan: s.State == lifecycle.StateOrphanMarker, hasData: s.HasData}, true
}

// routineBrief is d as a brief of rr, or false when d is kept whole.
func (rr *RootReport) routineBrief(d Decision) (brief, bool) {
	if d.Err != nil || d.Objects != 0 || d.Bytes != 0 || d.Lease != "" || !d.Started.Equal(d.Finished) ||
		!slices.Contains(routineReasons, d.Reason) {
		return brief{}, false
	}
	b, ok := briefOf(d.Status)
	if !ok {
		return brief{}, false
	}
	k := briefKind{action: d.Action, reason: d.Reason, detail: d.Detail}
	if d.Reason == outcome.ReasonNotDue {
		if d.Action != outcome.Skipped || d.Detail != notDueDetail(d.Status.PurgeAfter) {
			return brief{}, false
		}
		k.detail = ""
	}
	i := slices.Index(rr.kinds, k)
	if i < 0 {
		if len(rr.kinds) == maxKinds {
			return brief{}, false
		}
		i = len(rr.kinds)
		rr.kinds = append(rr.kinds, k)
	}
	b.kind, b.at = uint8(i), d.Started.UnixNano()
	return b, true
}

// status is the table as planned.
func (b *brief) status() lifecycle.TableStatus {
	m := b.marker
	s := lifecycle.TableStatus{Name: b.name, State: lifecycle.StateSoftDeleted, HasData: b.hasData, Marker: &m,
		TTL: b.ttl, DeletedAt: m.DeletedAt(), PurgeAfter: b.purgeAfter}
	if b.orphan {
		s.State = lifecycle.StateOrphanMarker
	}
	return s
}

// decision is the brief's decision in rr.
func (rr *RootReport) decisionOf(b *brief) Decision {
	k := rr.kinds[b.kind]
	at := time.Unix(0, b.at)
	d := Decision{Root: rr.Root, Table: b.name, Action: k.action, Reason: k.reason, Detail: k.detail, Status: b.status(), Started: at, Finished: at}
	if k.reason == outcome.ReasonNotDue {
		d.Detail = notDueDetail(b.purgeAfter)
	}
	return d
}

// notDueDecision is the decision a pass makes of a table not due yet.
func notDueDecision(s lifecycle.TableStatus) Decision {
	return Decision{Table: s.Name, Action: outcome.Skipped, Reason: outcome.ReasonNotDue, Detail: notDueDetail(s.PurgeAfter), Status: s}
}

func notDueDetail(purgeAfter time.Time) string {
	return "not due until " + purgeAfter.UTC().Format(time.RFC3339)
}
