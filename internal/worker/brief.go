package worker

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns how a report keeps the decisions of tables not due yet:
// most names of a big root, every pass. A full Decision (its
// TableStatus, times and strings) is some 500 bytes; a brief keeps what
// the decision is rebuilt from in under 100, and the rebuilt decision is
// the one the observers received, less the marker's LastModified and ETag
// (a purge's concern, not a report's).

// brief is one not-due decision of a report.
type brief struct {
	name       string
	marker     lifecycle.Marker
	ttl        time.Duration
	purgeAfter time.Time
	// at is when the decision was made (Started = Finished), Unix
	// nanoseconds.
	at      int64
	orphan  bool // orphan_marker, else soft_deleted
	hasData bool
}

// briefOf keeps a not-due table as a brief, when nothing of it but its
// name, marker and times would be lost (ok false otherwise: a problem to
// report, an unusual state).
func briefOf(s lifecycle.TableStatus) (brief, bool) {
	if s.Marker == nil || s.Problem != "" || s.FutureDated || s.Lease != nil || s.Hold != nil || s.Commit != nil ||
		(s.State != lifecycle.StateSoftDeleted && s.State != lifecycle.StateOrphanMarker) {
		return brief{}, false
	}
	return brief{name: s.Name, marker: *s.Marker, ttl: s.TTL, purgeAfter: s.PurgeAfter,
		orphan: s.State == lifecycle.StateOrphanMarker, hasData: s.HasData}, true
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

// decision is the not-due decision of root's table.
func (b *brief) decision(root string) Decision {
	at := time.Unix(0, b.at)
	return notDueDecision(root, b.status(), at)
}

// notDueDecision is the decision a pass makes of a table not due yet.
func notDueDecision(root string, s lifecycle.TableStatus, at time.Time) Decision {
	return Decision{Root: root, Table: s.Name, Action: outcome.Skipped, Reason: outcome.ReasonNotDue,
		Detail: "not due until " + s.PurgeAfter.UTC().Format(time.RFC3339), Status: s, Started: at, Finished: at}
}
