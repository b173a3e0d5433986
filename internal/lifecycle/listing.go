package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the one listing of a root a plan needs, and when a listing
// made by someone else may stand in for it. Discovery lists each candidate
// root to see whether it is a database; PlanPurgeFrom plans from that
// listing, so a discovered root costs what a configured one does (the PAUSE
// read and one listing per pass), not one listing more.
//
// A listing read earlier in the pass is safe to plan from. A plan only
// chooses candidates: every marker, hold, lease and commit it names is read
// afresh after the listing, and every purge re-reads the marker under its
// lease and, before the commit and before every batch, the lease, marker,
// hold and PAUSE (the guard, guard.go). What the older listing misses (a
// table dropped, a hold or a lease placed since) is either purged by the
// next pass or stopped by those re-reads; what it still shows that is gone
// reads as not found.

// Listing is what one complete one-level listing of a root said of its
// names: for each, whether it has a table directory, a marker, a lease, a
// hold, a purge commit, or a non-directory where the table's directory
// should be. Other entries are dropped, so it holds a few flags per name,
// not the pages.
type Listing struct {
	// prefix is the root's path in the store that listed it ("tenant-a/"
	// for discovery's parent store, "" for the root's own store).
	prefix  string
	entries map[string]*rootEntry
}

// NewListing starts a listing of the root that sits at prefix (ending in
// "/", or "" for the store's root) in the store whose pages Add receives.
// Only a listing whose every page was added may be planned from.
func NewListing(prefix string) *Listing {
	return &Listing{prefix: prefix, entries: map[string]*rootEntry{}}
}

// Add records one page of the listing.
func (l *Listing) Add(p objstore.Page) {
	for _, pre := range p.Prefixes {
		switch name, kind := classifyPrefix(strings.TrimPrefix(pre, l.prefix)); kind {
		case entryTable:
			l.entry(name).data = true
		case entryHold:
			l.entry(name).hold = true
		}
	}
	for _, o := range p.Objects {
		name, kind := classifyObject(strings.TrimPrefix(o.Key, l.prefix))
		if kind == entryOther {
			continue
		}
		e := l.entry(name)
		switch kind {
		case entryMarker:
			e.marker = true
		case entryLock:
			e.lease = true
		case entryHold:
			e.hold = true
		case entryCommit:
			e.commit = true
		case entryNotTable:
			e.notTable = true
		}
	}
}

func (l *Listing) entry(name string) *rootEntry {
	e := l.entries[name]
	if e == nil {
		e = &rootEntry{}
		l.entries[name] = e
	}
	return e
}

// list lists the root once, or returns listed when the caller already has
// the root's listing.
func (ns *Namespace) list(ctx context.Context, listed *Listing) (*Listing, error) {
	if listed != nil {
		return listed, nil
	}
	l := NewListing("")
	err := ns.store.List(ctx, "", func(p objstore.Page) error {
		l.Add(p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list root %s: %w", ns.store.URI(), err)
	}
	return l, nil
}

// PlanPurgeFrom is PlanPurge planned from listed, a complete listing of
// this root read earlier in the same pass (by discovery), instead of
// listing the root again; nil lists it. See the top of this file for why
// that is safe.
func (ns *Namespace) PlanPurgeFrom(ctx context.Context, listed *Listing, now time.Time, names ...string) (Plan, error) {
	return ns.plan(ctx, listed, now, names)
}
