package lifecycle

import (
	"strings"

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
// should be. Other entries are dropped, so it holds a few flags per name
// (some 100 bytes), not the pages. It keeps at most its limit of names:
// past it, the listing is full, keeps nothing, and the plan lists the root
// itself (streamed, scan.go), so what discovery carries for a pass stays
// bounded however big its roots.
type Listing struct {
	// prefix is the root's path in the store that listed it ("tenant-a/"
	// for discovery's parent store, "" for the root's own store).
	prefix  string
	entries map[string]*rootEntry
	// limit is the most names kept (0: no limit); full is set past it.
	limit int
	full  bool
}

// NewListing starts a listing of the root that sits at prefix (ending in
// "/", or "" for the store's root) in the store whose pages Add receives,
// keeping at most maxNames names (0: no limit). Only a listing whose every
// page was added, and that is not Full, may be planned from.
func NewListing(prefix string, maxNames int) *Listing {
	return &Listing{prefix: prefix, entries: map[string]*rootEntry{}, limit: maxNames}
}

// Full reports whether the root has more names than the listing keeps: it
// holds none then, and a plan from it lists the root again.
func (l *Listing) Full() bool { return l.full }

// Len is how many names the listing holds.
func (l *Listing) Len() int { return len(l.entries) }

// Add records one page of the listing.
func (l *Listing) Add(p objstore.Page) {
	for _, pre := range p.Prefixes {
		l.mark(classifyRootPrefix(strings.TrimPrefix(pre, l.prefix)))
	}
	for _, o := range p.Objects {
		l.mark(classifyObject(strings.TrimPrefix(o.Key, l.prefix)))
	}
}

func (l *Listing) mark(name string, kind entryKind) {
	if kind == entryOther || l.full {
		return
	}
	e := l.entries[name]
	if e == nil {
		if l.limit > 0 && len(l.entries) >= l.limit {
			l.full, l.entries = true, nil
			return
		}
		e = &rootEntry{}
		l.entries[strings.Clone(name)] = e
	}
	e.set(kind)
}

// ShowsDatabase reports whether one page of the listing of prefix shows a
// database root: a table directory (<name>.lance/, or a manifest-layout
// directory <8 hex>_<object id>/), the namespace catalog __manifest/, or a
// soft-delete marker. Discovery asks it of a child's first page.
func ShowsDatabase(prefix string, p objstore.Page) bool {
	for _, pre := range p.Prefixes {
		switch _, kind := classifyRootPrefix(strings.TrimPrefix(pre, prefix)); kind {
		case entryTable, entryNamespaced, entryCatalog:
			return true
		}
	}
	for _, o := range p.Objects {
		if _, kind := classifyObject(strings.TrimPrefix(o.Key, prefix)); kind == entryMarker {
			return true
		}
	}
	return false
}
