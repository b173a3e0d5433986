package worker

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns how a report keeps its routine decisions: those that did
// no work on a table and say the same of many: not due yet (most names of
// a big root, every pass), or kept back with the whole root (paused,
// blast_radius) or by the pass's limits (limit, shutdown, deadline). A
// full Decision (its TableStatus, times and strings) is some 500 bytes; a
// brief is 56 bytes and the table's name: the marker's fields, the
// purge_after, when it was decided, and an index into the root's few
// kinds of decision (action, reason, detail). The TTL is the marker's, or
// the root's default TTL when it carries none, as the plan computed it.
// The rebuilt decision is the one the observers received, less the
// Status's MarkerModified and MarkerETag (a purge's concern, not a
// report's). Decisions with an error, a problem, a lease or work done stay
// whole (RootReport.Decisions). Briefs are kept in chunks (briefList), so a
// million of them never sit in a slice being copied to a larger one.

// brief is one routine decision of a report.
type brief struct {
	name                string
	deletedAtMs, ttlMs  int64 // the marker's
	purgeAfterS, atNano int64 // purge_after (seconds), decided at
	purgeAfterNs        int32 // purge_after's nanoseconds
	kind                uint8 // index into RootReport.kinds
	flags               uint8
}

const (
	briefHasTTL  = 1 << iota // the marker carries ttl_ms
	briefOrphan              // orphan_marker, else soft_deleted
	briefHasData             // TableStatus.HasData
)

// briefKind is what a brief's decision says. A not-due decision's detail
// is derived from its table's purge_after (detail "" here).
type briefKind struct {
	action outcome.Action
	reason outcome.Reason
	detail string
	lease  string // a done purge's (due.go)
}

// notDueKind is what every not-due decision says.
var notDueKind = briefKind{action: outcome.Skipped, reason: outcome.ReasonNotDue}

// maxKinds is how many kinds one root's briefs may have: a decision of
// another kind is kept whole.
const maxKinds = math.MaxUint8 + 1

// routineReasons are the reasons a routine decision may have.
var routineReasons = []outcome.Reason{outcome.ReasonNotDue, outcome.ReasonPaused, outcome.ReasonBlastRadius,
	outcome.ReasonLimit, outcome.ReasonShutdown, outcome.ReasonDeadline}

// briefOf keeps a table as a brief (its kind and time unset), when
// nothing of it but the marker's LastModified and ETag would be lost: ok
// false for a problem to report, a lease, a hold, a commit, an unusual
// state. def is the root's default TTL.
func briefOf(s lifecycle.TableStatus, def time.Duration) (brief, bool) {
	if s.Marker == nil || s.Problem != "" || s.FutureDated || s.Lease != nil || s.Hold != nil || s.Commit != nil ||
		(s.State != lifecycle.StateSoftDeleted && s.State != lifecycle.StateOrphanMarker) ||
		s.TTL != s.Marker.TTL(def) || !s.DeletedAt.Equal(s.Marker.DeletedAt()) {
		return brief{}, false
	}
	b := brief{name: s.Name, deletedAtMs: s.Marker.DeletedAtMs, ttlMs: s.Marker.TTLMs,
		purgeAfterS: s.PurgeAfter.Unix(), purgeAfterNs: int32(s.PurgeAfter.Nanosecond())}
	if s.Marker.HasTTL {
		b.flags |= briefHasTTL
	}
	if s.State == lifecycle.StateOrphanMarker {
		b.flags |= briefOrphan
	}
	if s.HasData {
		b.flags |= briefHasData
	}
	return b, true
}

// status is the table as planned; def is the root's default TTL.
func (b *brief) status(def time.Duration) lifecycle.TableStatus {
	m := lifecycle.Marker{DeletedAtMs: b.deletedAtMs, TTLMs: b.ttlMs, HasTTL: b.flags&briefHasTTL != 0}
	s := lifecycle.TableStatus{Name: b.name, State: lifecycle.StateSoftDeleted, HasData: b.flags&briefHasData != 0, Marker: &m,
		TTL: m.TTL(def), DeletedAt: m.DeletedAt(), PurgeAfter: time.Unix(b.purgeAfterS, int64(b.purgeAfterNs))}
	if b.flags&briefOrphan != 0 {
		s.State = lifecycle.StateOrphanMarker
	}
	return s
}

// kindIndex is k's index in rr.kinds, added when new; false when the root
// has maxKinds kinds already.
func (rr *RootReport) kindIndex(k briefKind) (uint8, bool) {
	i := slices.Index(rr.kinds, k)
	if i < 0 {
		if len(rr.kinds) == maxKinds {
			return 0, false
		}
		i = len(rr.kinds)
		rr.kinds = append(rr.kinds, k)
	}
	return uint8(i), true
}

// routineBrief is d as a brief of rr, or false when d is kept whole.
func (rr *RootReport) routineBrief(d Decision) (brief, bool) {
	if d.Err != nil || d.Objects != 0 || d.Bytes != 0 || d.Lease != "" || !d.Started.Equal(d.Finished) ||
		!slices.Contains(routineReasons, d.Reason) {
		return brief{}, false
	}
	b, ok := briefOf(d.Status, rr.defaultTTL)
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
	if b.kind, ok = rr.kindIndex(k); !ok {
		return brief{}, false
	}
	b.atNano = d.Started.UnixNano()
	return b, true
}

// decisionOf is the brief's decision in rr.
func (rr *RootReport) decisionOf(b *brief) Decision {
	k := rr.kinds[b.kind]
	at := time.Unix(0, b.atNano)
	s := b.status(rr.defaultTTL)
	d := Decision{Root: rr.Root, Table: b.name, Action: k.action, Reason: k.reason, Detail: k.detail, Status: s, Started: at, Finished: at, Lease: k.lease}
	if k.reason == outcome.ReasonNotDue {
		d.Detail = notDueDetail(s.PurgeAfter)
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

// chunkSize is how many entries one chunk of a chunks holds.
const chunkSize = 4096

// chunks holds entries in fixed chunks: growing it never copies what it
// holds, and wastes at most a chunk.
type chunks[T any] struct {
	c [][]T
	n int
}

func (l *chunks[T]) add(v T) {
	if l.n%chunkSize == 0 {
		l.c = append(l.c, make([]T, 0, chunkSize))
	}
	c := &l.c[len(l.c)-1]
	*c = append(*c, v)
	l.n++
}

func (l *chunks[T]) len() int { return l.n }

func (l *chunks[T]) at(i int) *T { return &l.c[i/chunkSize][i%chunkSize] }

// concat appends o's entries, taking o's chunks when l is empty.
func (l *chunks[T]) concat(o *chunks[T]) {
	if l.n == 0 {
		*l = *o
		return
	}
	for i := range o.n {
		l.add(*o.at(i))
	}
}

// sortFunc sorts the entries in place by less (pattern-defeating
// quicksort: about linear time on entries nearly in order, as a plan's
// are).
func (l *chunks[T]) sortFunc(less func(a, b *T) bool) {
	sort.Sort(chunkSorter[T]{l, less})
}

type chunkSorter[T any] struct {
	l    *chunks[T]
	less func(a, b *T) bool
}

func (s chunkSorter[T]) Len() int           { return s.l.n }
func (s chunkSorter[T]) Less(i, j int) bool { return s.less(s.l.at(i), s.l.at(j)) }
func (s chunkSorter[T]) Swap(i, j int)      { a, b := s.l.at(i), s.l.at(j); *a, *b = *b, *a }

// briefList is a root's routine briefs.
type briefList = chunks[brief]

// sortBriefs sorts briefs by table name (a root's names are unique).
func sortBriefs(l *briefList) { l.sortFunc(func(a, b *brief) bool { return a.name < b.name }) }
