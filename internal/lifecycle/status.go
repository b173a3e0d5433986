package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// State is a table's lifecycle state as reaper sees it.
type State string

const (
	StateExists      State = "exists"
	StateSoftDeleted State = "soft_deleted"
	// StatePurging: soft-deleted and a process holds the table's lease.
	StatePurging State = "purging"
	// StatePartiallyPurged: a purge committed (<name>.reaper-purge) and
	// started deleting, then stopped (a crash, a budget, a lost lease, a
	// hold or PAUSE placed meanwhile). It cannot be revived; the next pass
	// finishes it whatever its TTL.
	StatePartiallyPurged State = "partially_purged"
	// StateStuck: a committed purge could not finish and needs a person
	// (purge_stuck.go): its marker was removed by hand, or a purge recorded
	// in the commit what stopped it (a writer, an object it cannot
	// delete). Problem says what to do. A stuck table with a marker is
	// tried again by every pass; without one, every pass reports it failed.
	StateStuck         State = "stuck"
	StateOrphanMarker  State = "orphan_marker"
	StateInvalidMarker State = "invalid_marker"
	// StateNotATable: <name>.lance is a symbolic link or a file, not a
	// directory. reaper never drops, purges or enters it (a link could
	// point anywhere, including at a live table).
	StateNotATable State = "not_a_table"
	// StateUnreadable: the marker or the legal hold exists but could not be
	// read (after the retries: a 403 on that key, a store error). The table
	// is never purged while so; the rest of the root is unaffected.
	StateUnreadable State = "unreadable"
	StateNotFound   State = "not_found"
	// StateDeregistered: a table directory holding .lance-deregistered
	// (LanceDB deregistered the table and keeps its data for
	// re-registration): reported, never cleaned.
	StateDeregistered State = "deregistered"
	// StateCatalog: __manifest/, the namespace catalog LanceDB keeps as a
	// Lance table: reported, never read, planned or deleted from.
	StateCatalog State = "namespace_catalog"
)

// TableStatus is one name of a root with its state.
type TableStatus struct {
	Name  string
	State State
	// HasData: <name>.lance/ holds at least one entry.
	HasData bool
	// Marker is set when a marker parsed (soft_deleted, purging, orphan_marker).
	Marker *Marker
	// TTL is the marker's TTL or the default when it carries none.
	TTL time.Duration
	// DeletedAt and PurgeAfter are set with Marker.
	DeletedAt  time.Time
	PurgeAfter time.Time
	// MarkerModified is the store's last-modified time of the marker, and
	// MarkerETag its ETag when it was read.
	MarkerModified time.Time
	MarkerETag     string
	// Problem explains invalid_marker, unreadable and future-dated markers.
	Problem string
	// FutureDated: deleted_at is further in the future than the skew
	// allowance; such a table is never purged.
	FutureDated bool
	// Lease is the holder while a lease is held (purging, or a revive).
	Lease *lock.Info
	// LeaseTakeoverAt is when, by the store's clock, the lease may be taken
	// over if its holder is gone (its LastModified + TTL + resolution +
	// skew allowance: not the holder's own expires_at_ms); zero when it
	// never can (a TTL of centuries) or the lease is unreadable.
	LeaseTakeoverAt time.Time
	// Hold is set while a legal hold blocks purges of the table.
	Hold *Hold
	// Commit is set when a purge committed against the current marker
	// (partially_purged, or purging while its lease is held).
	Commit *Commit
	// RetainRecord: the listing shows a retention record
	// (<name>.reaper-retain) beside the table, left by a retention run that
	// was interrupted or is running (retain_record.go).
	RetainRecord bool
}

// Due reports whether the table may be purged at now, a time of the
// store's clock. A committed purge is always due: it can only be finished.
func (s TableStatus) Due(now time.Time) bool {
	if s.Marker == nil || s.FutureDated {
		return false
	}
	return s.Commit != nil || !now.Before(s.PurgeAfter)
}

// rootEntry accumulates what the root listing says of one name; markers and
// table dirs may arrive on different pages.
type rootEntry struct {
	data, marker, lease, hold, commit, notTable, retain bool
	// namespaced: a manifest-layout directory <stem>/ (clash: beside a
	// root table of the same stem, scan_names.go); catalog: __manifest/.
	namespaced, clash, catalog bool
}

// List returns every name of the root with its state, sorted by name, from
// one paged listing of the root plus one read per marker and per held lease
// by a fixed pool of readers (scan.go), and one listing of _versions/ per
// due table: a table written after its drop has Problem set
// (written_after_drop.go).
func (ns *Namespace) List(ctx context.Context) ([]TableStatus, error) {
	return ns.collect(ctx, nil, scanStatus)
}

// Status returns the state of each named table, not_found for unknown names.
// It costs the same listing as List.
func (ns *Namespace) Status(ctx context.Context, names ...string) ([]TableStatus, error) {
	return ns.collect(ctx, names, scanStatus)
}

// EachStatus is Status (List without names) without the slice: fn receives
// each name's state, sorted by name, as soon as the root's listing has
// passed it, with the store's time every state was judged at (Due takes
// it). A root of millions of names costs a window of them at a time, not
// all of them (scan.go). An error from fn stops the listing and is
// returned; a listing that fails part way has handed fn the names before
// the failure. Due tables are checked for writes after their drop, as
// List does.
func (ns *Namespace) EachStatus(ctx context.Context, names []string, fn func(s TableStatus, now time.Time) error) error {
	_, err := ns.scan(ctx, nil, names, nameOrder, scanStatus, fn)
	return err
}

// collect is EachStatus into a slice; a scanPlan mode leaves out what
// only status shows (a retention plan, which leaves soft-deleted tables
// alone and reads each table itself).
func (ns *Namespace) collect(ctx context.Context, names []string, mode scanMode) ([]TableStatus, error) {
	var out []TableStatus
	_, err := ns.scan(ctx, nil, names, nameOrder, mode, func(s TableStatus, _ time.Time) error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func dataState(hasData bool) State {
	if hasData {
		return StateExists
	}
	return StateNotFound
}

// describe turns one root entry into a status, reading the marker, the
// lease, the hold and the commit it has; now is the store's clock.
func (ns *Namespace) describe(ctx context.Context, name string, e *rootEntry, now time.Time) (TableStatus, error) {
	switch {
	case e.catalog:
		return TableStatus{Name: name, State: StateCatalog, HasData: true, Problem: catalogNote}, nil
	case e.clash:
		return TableStatus{Name: name, State: StateNotATable, HasData: true, Problem: clashProblem(name)}, nil
	case e.namespaced:
		// Its directory is listed; a status reads what it holds
		// (probeNamespaced), a plan leaves that to the retention read.
		e.data = true
	}
	s, err := ns.describeEntry(ctx, name, e, now)
	if err == nil && s.FutureDated {
		// now may be the clock of a scan that started before this marker
		// was written: judge it again at a clock read after reading it.
		if later, err := ns.storeNow(ctx); err == nil && later.After(now) {
			ns.fillMarker(&s, *s.Marker, s.MarkerModified, later)
		}
	}
	if err == nil && e.notTable && s.State != StateUnreadable {
		// Whatever its marker says, a link is never a table.
		s.State, s.Problem, s.Commit = StateNotATable, notATableProblem(name), nil
	}
	return s, err
}

// describeEntry reads what the entry has and derives the state.
func (ns *Namespace) describeEntry(ctx context.Context, name string, e *rootEntry, now time.Time) (TableStatus, error) {
	s := TableStatus{Name: name, HasData: e.data, RetainRecord: e.retain}
	if e.lease {
		info, err := lock.Read(ctx, ns.store, LockKey(name))
		switch {
		case err == nil:
			if at := info.TakeoverAt(info.Modified, ns.opts.SkewAllowance); now.Before(at) {
				s.Lease = &info
				if !info.TakeoverNever(info.Modified, ns.opts.SkewAllowance) {
					s.LeaseTakeoverAt = at
				}
			}
		case errors.Is(err, objstore.ErrNotFound):
		default:
			// An unreadable lease blocks purges (the lock fails closed), so
			// show it as held rather than hide it.
			s.Lease = &lock.Info{Owner: "unreadable lease: " + err.Error()}
		}
	}
	if e.hold {
		h, err := ns.readHold(ctx, name)
		if err != nil {
			return ns.unreadable(ctx, s, err)
		}
		s.Hold = h
	}
	var commit *Commit
	if e.commit {
		c, _, err := ns.readCommit(ctx, name)
		if err != nil {
			return ns.unreadable(ctx, s, err)
		}
		commit = c
	}
	var body []byte
	if e.marker {
		b, obj, err := ns.store.Get(ctx, MarkerKey(name), MaxControlBytes)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			// Revived or purged between the listing and the read.
		case errors.Is(err, objstore.ErrTooLarge):
			// Not a marker of Lance's or reaper's: invalid, never purged.
			s.State, s.Problem = StateInvalidMarker, fmt.Sprintf("%v; a marker is a few dozen bytes of JSON (limit %d), so this is not one: inspect and remove it by hand", err, MaxControlBytes)
			return s, nil
		case err != nil:
			return ns.unreadable(ctx, s, fmt.Errorf("read marker %s: %w", MarkerKey(name), err))
		default:
			body = b
			s.MarkerModified, s.MarkerETag = obj.LastModified, obj.ETag
		}
	}
	if commit != nil && body == nil {
		// The commit was read before the marker: a purge that finished in
		// between deleted the commit, then the marker (its order), and
		// left nothing stuck. Only a commit still there after the marker
		// is gone is one.
		c, _, err := ns.readCommit(ctx, name)
		if err != nil {
			return ns.unreadable(ctx, s, err)
		}
		commit = c
	}
	if commit != nil && (body == nil || !commit.Matches(body)) {
		s.Problem = staleCommitProblem(name, body != nil)
		if body == nil {
			s.State, s.Commit = StateStuck, commit
			return s, nil
		}
		commit = nil
	}
	if body == nil {
		s.State = dataState(e.data)
		return s, nil
	}
	m, err := ParseMarker(body)
	if err != nil {
		s.State, s.Problem = StateInvalidMarker, err.Error()
		return s, nil
	}
	s.Commit = commit
	ns.fillMarker(&s, m, s.MarkerModified, now)
	switch {
	case s.Lease != nil:
		s.State = StatePurging
	case s.Commit != nil && s.Commit.Stuck != "":
		s.State = StateStuck
		s.Problem = fmt.Sprintf("%s (recorded %s)", s.Commit.Stuck, s.Commit.stuckAt().UTC().Format(time.RFC3339))
	case s.Commit != nil:
		s.State = StatePartiallyPurged
	case !e.data:
		s.State = StateOrphanMarker
	default:
		s.State = StateSoftDeleted
	}
	return s, nil
}

// notATableProblem explains StateNotATable.
func notATableProblem(name string) string {
	return fmt.Sprintf("%s is not a directory (a symbolic link or a file where the table's directory should be): it is not a table, and reaper never drops, purges or enters it; remove or replace it by hand",
		tablePath(name))
}

// staleCommitProblem explains a purge commit that names no current marker.
func staleCommitProblem(name string, hasMarker bool) string {
	if hasMarker {
		return fmt.Sprintf("%s names an earlier marker (the table was revived and dropped again without reaper): the next purge removes it and judges the new marker by its own TTL", CommitKey(name))
	}
	return fmt.Sprintf("%s is left without a marker: a purge had started deleting this table when its marker was removed outside reaper, so the table is incomplete (LanceDB cannot open it); %s", CommitKey(name), fixMarker)
}

// unreadable reports a table whose marker or hold could not be read: one
// bad key must not stop the plan of the whole root, and a table reaper
// cannot read is never purged (fail closed). A cancelled pass is an error.
func (ns *Namespace) unreadable(ctx context.Context, s TableStatus, err error) (TableStatus, error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return s, err
	}
	s.State, s.Problem = StateUnreadable, err.Error()
	return s, nil
}

// fillMarker sets the marker-derived fields and flags future-dated markers;
// lm is the marker's LastModified and now the store's clock.
func (ns *Namespace) fillMarker(s *TableStatus, m Marker, lm, now time.Time) {
	s.Marker = &m
	s.TTL = m.TTL(ns.opts.DefaultTTL)
	s.DeletedAt = m.DeletedAt()
	s.PurgeAfter = dueAt(m, lm, ns.opts.DefaultTTL)
	if s.FutureDated { // judged again at a later now
		s.FutureDated, s.Problem = false, ""
	}
	if s.DeletedAt.After(now.Add(ns.opts.SkewAllowance)) {
		s.FutureDated = true
		s.Problem = fmt.Sprintf("marker is dated %s, more than the skew allowance (%s) in the future; check the clock of the process that dropped it",
			s.DeletedAt.UTC().Format(time.RFC3339), ns.opts.SkewAllowance)
	}
}
