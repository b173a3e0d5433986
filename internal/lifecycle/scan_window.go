package lifecycle

import (
	"container/heap"
	"errors"
	"fmt"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns when a name of a streaming root listing is complete, and
// when it may be handed on in name order: the rule that lets a plan or a
// status hold a window of a root instead of all of it.
//
// Completion. The Store lists in key order, objects and prefixes together
// and across pages (objstore.Store's contract; checked here page by page,
// and a listing out of order is an error, never a guess). Every key of a
// name N is N plus one of the layout's suffixes (names.go), each starting
// with "."; the greatest is lastKey(N) = N+".reaper-retain", or N+"/" for
// a stem that can be a manifest-layout directory or the catalog. Once the
// listing has passed lastKey(N), no key of N can follow: N is complete.
//
// Name order. Keys sort unlike names when a name is the start of another
// followed by a byte at most '.': "a-b.deleted" and "a.b.deleted" sort
// before "a.deleted" while "a" sorts before both "a-b" and "a.b". So a
// complete name N may still be preceded, in name order, by a shorter name
// M = N[:i] with N[i] <= '.' whose keys are not all listed yet, though it
// may have none at all. N is released in name order once the listing has
// passed lastKey(M) for every such M too (releaseBound). Any other name
// that sorts before N has all its keys before N's, which the listing has
// shown already. A window in name order holds, besides the names of the
// page at hand, the names that wait behind such a shorter one: for a root
// whose tables are all named "x.<n>" that is most of the root (its flags,
// a few dozen bytes a name). A plan does not need name order and releases
// names as they complete; only `reaper status` asks for it.

// scanOrder is the order a window releases names in.
type scanOrder int

const (
	// completionOrder releases each name once complete: the window holds
	// the names whose keys the listing is passing, whatever they are.
	completionOrder scanOrder = iota
	// nameOrder releases names sorted by name (status output).
	nameOrder
)

// errListOrder: the store listed a key that does not sort after the keys
// before it, so completeness cannot be judged.
var errListOrder = errors.New("root listing out of key order")

// window collects the root listing's entries by stem (a root table's name,
// or a manifest-layout directory's without "/": scan_names.go) and
// releases each once the listing has passed it.
type window struct {
	order scanOrder
	// only, when not nil, says which stems are kept; the others' entries
	// are dropped.
	only    *nameFilter
	pending map[string]*pendingName
	heap    pendingHeap
	// pos is the greatest key listed so far; started: a key was listed.
	pos     string
	started bool
}

// pendingName is one name the listing has shown and the window holds.
type pendingName struct {
	name  string
	entry rootEntry
	// key orders the heap; from is the listing position from which the
	// name may be released (both lastKey(name) in completion order).
	key, from string
}

func newWindow(order scanOrder, only *nameFilter) *window {
	w := &window{order: order, pending: map[string]*pendingName{}, only: only}
	for _, n := range only.rootStems() {
		w.entry(n) // a named table is reported even with no key at all
	}
	return w
}

// add records one page of the listing.
func (w *window) add(p objstore.Page) error {
	last, err := w.checkOrder(p)
	if err != nil {
		return err
	}
	for _, pre := range p.Prefixes {
		w.mark(classifyRootPrefix(pre))
	}
	for _, o := range p.Objects {
		w.mark(classifyObject(o.Key))
	}
	if last != "" {
		w.pos, w.started = last, true
	}
	return nil
}

// checkOrder returns the page's greatest key after checking every key of
// the page sorts after everything listed before, each kind in order.
func (w *window) checkOrder(p objstore.Page) (string, error) {
	last := ""
	check := func(prev, key string) error {
		if (prev != "" && key <= prev) || (w.started && key <= w.pos) {
			return fmt.Errorf("%w: %q listed after %q", errListOrder, key, max(prev, w.pos))
		}
		last = max(last, key)
		return nil
	}
	prev := ""
	for _, pre := range p.Prefixes {
		if err := check(prev, pre); err != nil {
			return "", err
		}
		prev = pre
	}
	prev = ""
	for _, o := range p.Objects {
		if err := check(prev, o.Key); err != nil {
			return "", err
		}
		prev = o.Key
	}
	return last, nil
}

// mark records one classified key of name.
func (w *window) mark(name string, kind entryKind) {
	if kind == entryOther || !w.only.keeps(name) {
		return
	}
	w.entry(name).entry.set(kind)
}

// addEntry records what a complete listing (Listing) says of name.
func (w *window) addEntry(name string, e rootEntry) {
	if !w.only.keeps(name) {
		return
	}
	w.entry(name).entry.merge(e)
}

func (w *window) entry(name string) *pendingName {
	if p := w.pending[name]; p != nil {
		return p
	}
	// The name outlives its page: a copy, not a slice of the page's key.
	name = strings.Clone(name)
	p := &pendingName{name: name, key: lastKey(name), from: lastKey(name)}
	if w.order == nameOrder {
		p.key, p.from = name, releaseBound(name)
	}
	w.pending[name] = p
	heap.Push(&w.heap, p)
	return p
}

// release hands fn every name the listing has passed, in the window's
// order; all releases them all (the listing ended).
func (w *window) release(all bool, fn func(*pendingName) error) error {
	for len(w.heap) > 0 {
		p := w.heap[0]
		if !all && (!w.started || w.pos < p.from) {
			return nil
		}
		heap.Pop(&w.heap)
		delete(w.pending, p.name)
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// held is how many names the window holds.
func (w *window) held() int { return len(w.heap) }

// releaseBound is the listing position from which name may be released in
// name order: past its own keys and those of every shorter name that may
// sort before it but list after it (see the top of this file).
func releaseBound(name string) string {
	bound := lastKey(name)
	for i := 1; i < len(name); i++ {
		if name[i] <= '.' {
			bound = max(bound, lastKey(name[:i]))
		}
	}
	return bound
}

// set records one kind of key.
func (e *rootEntry) set(kind entryKind) {
	switch kind {
	case entryTable:
		e.data = true
	case entryMarker:
		e.marker = true
	case entryLock:
		e.lease = true
	case entryHold:
		e.hold = true
	case entryCommit:
		e.commit = true
	case entryRetain:
		e.retain = true
	case entryNotTable:
		e.notTable = true
	case entryNamespaced:
		e.namespaced = true
	case entryCatalog:
		e.catalog = true
	}
}

// merge adds the kinds of key o has.
func (e *rootEntry) merge(o rootEntry) {
	e.data, e.marker, e.lease = e.data || o.data, e.marker || o.marker, e.lease || o.lease
	e.hold, e.commit, e.notTable = e.hold || o.hold, e.commit || o.commit, e.notTable || o.notTable
	e.retain = e.retain || o.retain
	e.namespaced, e.catalog = e.namespaced || o.namespaced, e.catalog || o.catalog
}

// any reports whether the entry has a key.
func (e rootEntry) any() bool {
	return e.data || e.marker || e.lease || e.hold || e.commit || e.notTable || e.retain || e.namespaced || e.catalog
}

// pendingHeap orders pending names by key.
type pendingHeap []*pendingName

func (h pendingHeap) Len() int           { return len(h) }
func (h pendingHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h pendingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)        { *h = append(*h, x.(*pendingName)) }
func (h *pendingHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
