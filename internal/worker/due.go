package worker

import (
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns how a pass keeps a root's due tables until it purges
// them, and the purges that completed. A mass drop makes every table of a
// root due, and a dry run or a pass with no limit decides each: as full
// statuses and decisions that was some 800 bytes a table. A due table is a
// brief (brief.go) plus the marker's LastModified and ETag, which its
// purge compares under the lease (PurgeOptions.Planned); a status a brief
// cannot carry (a purge commit, a problem) is kept whole. A completed purge
// or dry run without an error is a brief plus what it did.

// dueEntry is one due table.
type dueEntry struct {
	b        brief
	modified time.Time
	etag     string
	// full is the status when a brief cannot carry it.
	full *lifecycle.TableStatus
}

// dueList is a root's due tables.
type dueList struct {
	entries chunks[dueEntry]
	// def is the root's default TTL (brief.status).
	def time.Duration
}

func (l *dueList) add(s lifecycle.TableStatus) {
	if b, ok := briefOf(s, l.def); ok {
		l.entries.add(dueEntry{b: b, modified: s.MarkerModified, etag: s.MarkerETag})
		return
	}
	l.entries.add(dueEntry{full: &s})
}

func (l *dueList) len() int {
	if l == nil {
		return 0
	}
	return l.entries.len()
}

// status is the i-th table's status, as planned.
func (l *dueList) status(i int) lifecycle.TableStatus {
	e := l.entries.at(i)
	if e.full != nil {
		return *e.full
	}
	s := e.b.status(l.def)
	s.MarkerModified, s.MarkerETag = e.modified, e.etag
	return s
}

// all yields every table's status in order.
func (l *dueList) all(yield func(lifecycle.TableStatus) bool) {
	for i := range l.len() {
		if !yield(l.status(i)) {
			return
		}
	}
}

// sort orders the tables as a pass purges them (lifecycle.CompareDue).
func (l *dueList) sort() {
	key := func(e *dueEntry) (time.Time, string) {
		if e.full != nil {
			return e.full.PurgeAfter, e.full.Name
		}
		return time.Unix(e.b.purgeAfterS, int64(e.b.purgeAfterNs)), e.b.name
	}
	l.entries.sortFunc(func(a, b *dueEntry) bool {
		ta, na := key(a)
		tb, nb := key(b)
		if c := ta.Compare(tb); c != 0 {
			return c < 0
		}
		return strings.Compare(na, nb) < 0
	})
}

// filter is the tables keep keeps, in order.
func (l *dueList) filter(keep func(lifecycle.TableStatus) bool) *dueList {
	out := &dueList{def: l.def}
	for i := range l.len() {
		if keep(l.status(i)) {
			out.entries.add(*l.entries.at(i))
		}
	}
	return out
}

// doneBrief is a completed purge or dry run of a report.
type doneBrief struct {
	b              brief
	objects, bytes int64
	finishedNano   int64
}

// doneBriefOf is d as a doneBrief of rr, or false when d is kept whole: an
// error, a status a brief cannot carry, another action.
func (rr *RootReport) doneBriefOf(d Decision) (doneBrief, bool) {
	if d.Err != nil || (d.Action != outcome.Purged && d.Action != outcome.DryRun) ||
		(d.Reason != outcome.ReasonDue && d.Reason != outcome.ReasonOrphanMarker) {
		return doneBrief{}, false
	}
	b, ok := briefOf(d.Status, rr.defaultTTL)
	if !ok {
		return doneBrief{}, false
	}
	if b.kind, ok = rr.kindIndex(briefKind{action: d.Action, reason: d.Reason, detail: d.Detail, lease: d.Lease}); !ok {
		return doneBrief{}, false
	}
	b.atNano = d.Started.UnixNano()
	return doneBrief{b: b, objects: d.Objects, bytes: d.Bytes, finishedNano: d.Finished.UnixNano()}, true
}

// doneDecision is the decision a doneBrief keeps.
func (rr *RootReport) doneDecision(db *doneBrief) Decision {
	d := rr.decisionOf(&db.b)
	d.Objects, d.Bytes, d.Finished = db.objects, db.bytes, time.Unix(0, db.finishedNano)
	return d
}
