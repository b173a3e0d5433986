package reaper

import (
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
)

// The types of this file are the lifecycle engine's, spelled out so that
// `go doc` shows every field; api_test.go keeps them field for field.

// State is the lifecycle state of one name of a root (see the package
// doc).
type State string

// States.
const (
	StateExists      State = "exists"
	StateSoftDeleted State = "soft_deleted"
	// StatePurging: soft-deleted, and a process holds the table's lease.
	StatePurging State = "purging"
	// StatePartiallyPurged: a purge committed (<name>.reaper-purge) and
	// deleted part of the table, then stopped. It cannot be revived; the
	// next purge finishes it whatever its TTL.
	StatePartiallyPurged State = "partially_purged"
	// StateStuck: a committed purge could not finish and needs a person;
	// Problem says what to do.
	StateStuck State = "stuck"
	// StateNotATable: <name>.lance is a symbolic link or a file; never
	// dropped, purged or entered.
	StateNotATable     State = "not_a_table"
	StateOrphanMarker  State = "orphan_marker"
	StateInvalidMarker State = "invalid_marker"
	// StateUnreadable: the marker or the legal hold exists but could not be
	// read; never purged while so.
	StateUnreadable State = "unreadable"
	StateNotFound   State = "not_found"
	// StateDeregistered: a table LanceDB deregistered (.lance-deregistered
	// in its directory), its data kept for re-registration: reported,
	// never cleaned.
	StateDeregistered State = "deregistered"
	// StateCatalog: __manifest/, LanceDB's namespace catalog (a Lance
	// table): EachStatusRetention reports it with its versions; reaper
	// never reads or deletes anything in it.
	StateCatalog State = "namespace_catalog"
)

// TableStatus is one name of a root with its state, as Status, List,
// ListPurgeable and PlanPurge report it.
type TableStatus struct {
	// Name is a root table's name, or a namespaced table's directory
	// ("76cba2fc_tenant_a$inner/"; ObjectID is LanceDB's name of it).
	Name  string
	State State
	// HasData: <name>.lance/ holds at least one entry.
	HasData bool
	// Marker is set when a marker parsed (soft_deleted, purging,
	// partially_purged, orphan_marker, stuck).
	Marker *Marker
	// TTL is the marker's TTL, or the default when it carries none.
	TTL time.Duration
	// DeletedAt and PurgeAfter are set with Marker. PurgeAfter is when the
	// table becomes due by the store's clock.
	DeletedAt  time.Time
	PurgeAfter time.Time
	// MarkerModified is the store's last-modified time of the marker, and
	// MarkerETag its ETag, when it was read.
	MarkerModified time.Time
	MarkerETag     string
	// Problem explains invalid_marker, unreadable, stuck, not_a_table and
	// future-dated markers, and a due table written after its drop (every
	// purge skips it as a conflict).
	Problem string
	// FutureDated: deleted_at is further in the future than the skew
	// allowance; such a table is never purged.
	FutureDated bool
	// Lease is the holder while a lease is held (purging, or a revive).
	Lease *LeaseInfo
	// LeaseTakeoverAt is when, by the store's clock, the lease may be taken
	// over if its holder is gone; zero when it never can or is unreadable.
	LeaseTakeoverAt time.Time
	// Hold is set while a legal hold blocks purges of the table.
	Hold *Hold
	// Commit is set when a purge committed against the current marker
	// (partially_purged, stuck, or purging while its lease is held).
	Commit *PurgeCommit
	// RetainRecord: a version-retention record (<name>.reaper-retain) is
	// beside the table, left by a retention run that was interrupted or is
	// running; the next run takes over only what of it is still true.
	RetainRecord bool
}

// ObjectID is the name LanceDB knows the table by: a namespaced table's
// object id ("tenant_a$inner"), a root table's name.
func (s TableStatus) ObjectID() string { return ObjectID(s.Name) }

// Namespace is the namespace path of a namespaced table (["tenant_a"]),
// nil for a root table.
func (s TableStatus) Namespace() []string {
	if !lifecycle.IsNamespaced(s.Name) {
		return nil
	}
	ns, _ := SplitObjectID(s.ObjectID())
	return ns
}

// Due reports whether the table may be purged at now, a time of the
// store's clock (StoreNow): a valid marker whose PurgeAfter has passed, or
// a committed purge, which can only be finished.
func (s TableStatus) Due(now time.Time) bool { return s.internal().Due(now) }

// BelowTTLFloor reports whether a purge keeps the table for its short TTL
// with floor as the minimum TTL (ErrShortTTL, short_ttl): it has a marker
// whose TTL is below floor, its purge has not committed and it is not an
// orphan marker.
func (s TableStatus) BelowTTLFloor(floor time.Duration) bool {
	return lifecycle.BelowTTLFloor(s.internal(), floor)
}

// Marker is a parsed <name>.deleted marker: {"deleted_at_ms":…,"ttl_ms":…}.
type Marker struct {
	// DeletedAtMs is the Unix epoch time of the drop in milliseconds, by the
	// dropping process's clock.
	DeletedAtMs int64
	// TTLMs is how long the data is kept after the drop.
	TTLMs int64
	// HasTTL is false when the marker carried no ttl_ms: the default TTL
	// applies then.
	HasTTL bool
}

// TTL is the marker's TTL, or def when it carries none.
func (m Marker) TTL(def time.Duration) time.Duration { return m.internal().TTL(def) }

// DeletedAt is the time of the drop.
func (m Marker) DeletedAt() time.Time { return m.internal().DeletedAt() }

// PurgeAfter is deleted_at + TTL (def when the marker carries none). A
// table is due once this and its marker's LastModified + TTL have passed
// by the store's clock (TableStatus.PurgeAfter).
func (m Marker) PurgeAfter(def time.Duration) time.Time { return m.internal().PurgeAfter(def) }

// PurgeAfterMs is PurgeAfter in Unix milliseconds, saturating instead of
// overflowing (such a table is never due).
func (m Marker) PurgeAfterMs(def time.Duration) int64 { return m.internal().PurgeAfterMs(def) }

// Hold is a legal hold <name>.reaper-hold: while it exists the table is
// never purged.
type Hold struct {
	Reason   string
	HeldBy   string
	HeldAtMs int64
	// Folder: the hold is a folder <name>.reaper-hold/ (made by hand), not
	// an object of reaper's; it holds all the same and is removed by hand.
	Folder bool
}

// LeaseInfo describes the holder of a table's lifecycle lease.
type LeaseInfo struct {
	// Owner names the holder, by default "<host>/<pid>/<random>".
	Owner string
	// Token identifies one holding of the lease; it survives renewals.
	Token string
	// Generation starts at 1 and is bumped on each takeover: a fencing
	// token.
	Generation int64
	// TTL is how long the lease lasts after its last write, by the store's
	// clock.
	TTL time.Duration
	// AcquiredAt, RenewedAt and ExpiresAt are the holder's estimates of the
	// store's clock, for people; no decision reads them.
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
	// Modified is the store's last-modified time of the lease when read.
	Modified time.Time
}

// TakeoverAt is the earliest time, by the store's clock, a contender may
// take over the lease read with last-modified time lm: its TTL after lm,
// plus the store's time resolution and the skew allowance.
func (l LeaseInfo) TakeoverAt(lm time.Time, skew time.Duration) time.Time {
	return l.internal().TakeoverAt(lm, skew)
}

// TakeoverNever reports a lease that is never taken over (a TTL of
// centuries).
func (l LeaseInfo) TakeoverNever(lm time.Time, skew time.Duration) bool {
	return l.internal().TakeoverNever(lm, skew)
}

// PurgeCommit is a purge commit <name>.reaper-purge: a purge that wrote it
// may have deleted part of the table, which can then only be finished.
type PurgeCommit struct {
	// Owner and Generation name the purge (its lease) that committed.
	Owner      string
	Generation int64
	// CommittedAtMs is the store's clock when the purge committed.
	CommittedAtMs int64
	// Marker is the committed marker's body, verbatim.
	Marker string
	// Stuck, when set, is why a purge under this commit could not finish
	// and what a person must do; StuckAtMs is when it was recorded.
	Stuck     string
	StuckAtMs int64
}

// Matches reports whether the commit was made against this marker body.
func (c PurgeCommit) Matches(marker []byte) bool {
	return lifecycle.Commit{Marker: c.Marker}.Matches(marker)
}

// Plan splits a root into what a purge pass would do with each name
// (PlanPurge).
type Plan struct {
	// Due are purgeable tables (and orphan markers), oldest PurgeAfter
	// first.
	Due []TableStatus
	// NotDue are soft-deleted tables whose TTL has not passed.
	NotDue []TableStatus
	// Invalid are invalid, unreadable or future-dated markers, names that
	// are not tables and stuck purges without a marker: reported, never
	// purged.
	Invalid []TableStatus
	// Busy are tables whose lease another process holds.
	Busy []TableStatus
	// Held are soft-deleted tables under a legal hold: never purged.
	Held []TableStatus
	// Unpurgeable are names given to PlanPurge that have no marker: live
	// (exists) or unknown (not_found).
	Unpurgeable []TableStatus
	// Live are tables with data and no marker.
	Live []TableStatus
	// LeaseOnly are names that had a lease and no marker: what a dead
	// process may have left behind.
	LeaseOnly []string
	// Now is the time the plan was judged at: the store's clock (or the
	// caller's now, when that was earlier).
	Now time.Time
}

func statusOf(s lifecycle.TableStatus) TableStatus {
	out := TableStatus{Name: s.Name, State: State(s.State), HasData: s.HasData, TTL: s.TTL,
		DeletedAt: s.DeletedAt, PurgeAfter: s.PurgeAfter, MarkerModified: s.MarkerModified,
		MarkerETag: s.MarkerETag, Problem: s.Problem, FutureDated: s.FutureDated, LeaseTakeoverAt: s.LeaseTakeoverAt,
		RetainRecord: s.RetainRecord}
	if s.Marker != nil {
		m := markerOf(*s.Marker)
		out.Marker = &m
	}
	if s.Lease != nil {
		l := leaseOf(*s.Lease)
		out.Lease = &l
	}
	if s.Hold != nil {
		h := holdOf(*s.Hold)
		out.Hold = &h
	}
	if c := s.Commit; c != nil {
		out.Commit = &PurgeCommit{Owner: c.Owner, Generation: c.Generation, CommittedAtMs: c.CommittedAtMs,
			Marker: c.Marker, Stuck: c.Stuck, StuckAtMs: c.StuckAtMs}
	}
	return out
}

func (s TableStatus) internal() lifecycle.TableStatus {
	out := lifecycle.TableStatus{Name: s.Name, State: lifecycle.State(s.State), HasData: s.HasData, TTL: s.TTL,
		DeletedAt: s.DeletedAt, PurgeAfter: s.PurgeAfter, MarkerModified: s.MarkerModified,
		MarkerETag: s.MarkerETag, Problem: s.Problem, FutureDated: s.FutureDated, LeaseTakeoverAt: s.LeaseTakeoverAt,
		RetainRecord: s.RetainRecord}
	if s.Marker != nil {
		m := s.Marker.internal()
		out.Marker = &m
	}
	if s.Lease != nil {
		l := s.Lease.internal()
		out.Lease = &l
	}
	if h := s.Hold; h != nil {
		out.Hold = &lifecycle.Hold{Reason: h.Reason, HeldBy: h.HeldBy, HeldAtMs: h.HeldAtMs, Folder: h.Folder}
	}
	if c := s.Commit; c != nil {
		out.Commit = &lifecycle.Commit{Owner: c.Owner, Generation: c.Generation, CommittedAtMs: c.CommittedAtMs,
			Marker: c.Marker, Stuck: c.Stuck, StuckAtMs: c.StuckAtMs}
	}
	return out
}

func statusesOf(in []lifecycle.TableStatus) []TableStatus {
	if in == nil {
		return nil
	}
	out := make([]TableStatus, len(in))
	for i, s := range in {
		out[i] = statusOf(s)
	}
	return out
}

func markerOf(m lifecycle.Marker) Marker {
	return Marker{DeletedAtMs: m.DeletedAtMs, TTLMs: m.TTLMs, HasTTL: m.HasTTL}
}

func (m Marker) internal() lifecycle.Marker {
	return lifecycle.Marker{DeletedAtMs: m.DeletedAtMs, TTLMs: m.TTLMs, HasTTL: m.HasTTL}
}

func holdOf(h lifecycle.Hold) Hold {
	return Hold{Reason: h.Reason, HeldBy: h.HeldBy, HeldAtMs: h.HeldAtMs, Folder: h.Folder}
}

func leaseOf(l lock.Info) LeaseInfo {
	return LeaseInfo{Owner: l.Owner, Token: l.Token, Generation: l.Generation, TTL: l.TTL,
		AcquiredAt: l.AcquiredAt, RenewedAt: l.RenewedAt, ExpiresAt: l.ExpiresAt, Modified: l.Modified}
}

func (l LeaseInfo) internal() lock.Info {
	return lock.Info{Owner: l.Owner, Token: l.Token, Generation: l.Generation, TTL: l.TTL,
		AcquiredAt: l.AcquiredAt, RenewedAt: l.RenewedAt, ExpiresAt: l.ExpiresAt, Modified: l.Modified}
}

func planOf(p lifecycle.Plan) Plan {
	return Plan{Due: statusesOf(p.Due), NotDue: statusesOf(p.NotDue), Invalid: statusesOf(p.Invalid),
		Busy: statusesOf(p.Busy), Held: statusesOf(p.Held), Unpurgeable: statusesOf(p.Unpurgeable),
		Live: statusesOf(p.Live), LeaseOnly: p.LeaseOnly, Now: p.Now}
}
