package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// This file owns which names one complete stem of the root listing stands
// for. The listing is grouped by stem (scan_window.go): a root table's
// name, with its directory <stem>.lance/ and its control objects
// <stem>.<suffix>, and a manifest-layout directory's stem, whose control
// objects are spelled the same way beside <stem>/ (names.go). A stem
// therefore hands on a root table, a namespaced table, both, or the
// catalog:
//
//   - a stem with <stem>/ and nothing of a root table (no <stem>.lance/,
//     <stem>.lance, marker or purge commit) is the namespaced table
//     <stem>/, with the lease, hold and retention record of the stem;
//   - a stem with both is a clash: their control keys would be one, so
//     the root table keeps them (its lifecycle is reaper's) and the
//     namespaced one is reported not_a_table, never cleaned, until one is
//     renamed;
//   - __manifest/ is the catalog: not a table, handed on (namespace_catalog)
//     only to a status with versions (EachStatusRetention), never read or
//     planned.

// nameFilter is the names a caller asked for (a scan with only): root
// table names, namespaced tables by their directory and by their object
// id.
type nameFilter struct {
	// stems are the stems whose keys the window keeps: asked-for root
	// names and the stems of asked-for directories.
	stems map[string]bool
	// names are the names asked for as given; ids the object ids.
	names, ids map[string]bool
	// matched are the object ids a directory answered.
	matched map[string]bool
}

// newNameFilter is the filter of only, nil for every name.
func newNameFilter(only []string) *nameFilter {
	if len(only) == 0 {
		return nil
	}
	f := &nameFilter{stems: map[string]bool{}, names: map[string]bool{}, ids: map[string]bool{}, matched: map[string]bool{}}
	for _, n := range only {
		f.names[n] = true
		switch {
		case IsNamespaced(n):
			f.stems[controlStem(n)] = true
		case IsObjectID(n):
			f.ids[n] = true
		default:
			f.stems[n] = true
		}
	}
	return f
}

// keeps reports whether the keys of stem are wanted.
func (f *nameFilter) keeps(stem string) bool {
	if f == nil || f.stems[stem] {
		return true
	}
	id, ok := namespacedStem(stem)
	return ok && f.ids[id]
}

// rootStems are the root names asked for, reported not_found when the
// listing has no key of theirs.
func (f *nameFilter) rootStems() []string {
	if f == nil {
		return nil
	}
	var out []string
	for s := range f.stems {
		out = append(out, s)
	}
	return out
}

// wantsRoot and wantsNamespaced say whether the root table stem and the
// namespaced table stem+"/" were asked for.
func (f *nameFilter) wantsRoot(stem string) bool {
	return f == nil || f.names[stem] && !IsObjectID(stem)
}

func (f *nameFilter) wantsNamespaced(stem string) bool {
	if f == nil || f.names[NamespacedName(stem)] {
		return true
	}
	id, _ := namespacedStem(stem)
	if f.ids[id] {
		f.matched[id] = true
		return true
	}
	return false
}

// unmatched are the object ids asked for that no directory answered,
// sorted: they are reported not_found once the listing has ended.
func (f *nameFilter) unmatched() []string {
	if f == nil {
		return nil
	}
	var out []string
	for id := range f.ids {
		if !f.matched[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// stemName is one name a stem stands for, with what the listing says of it.
type stemName struct {
	name  string
	entry rootEntry
}

// split returns the names stem stands for that f wants, in name order: a
// root table (an asked-for one even without a key: not_found), then a
// namespaced table or, when catalog, the catalog.
func (f *nameFilter) split(stem string, e rootEntry, catalog bool) []stemName {
	var out []stemName
	rootPart := e
	rootPart.namespaced, rootPart.catalog = false, false
	root := rootPart.data || rootPart.notTable || rootPart.marker || rootPart.commit
	switch {
	case e.namespaced && !root:
		// Its control objects are the namespaced table's.
		if f.wantsNamespaced(stem) {
			out = append(out, stemName{NamespacedName(stem), rootEntry{namespaced: true, lease: e.lease, hold: e.hold, retain: e.retain}})
		}
		if f != nil && f.wantsRoot(stem) {
			out = append([]stemName{{stem, rootEntry{}}}, out...)
		}
		return out
	case e.namespaced:
		if f.wantsRoot(stem) {
			out = append(out, stemName{stem, rootPart})
		}
		if f.wantsNamespaced(stem) {
			out = append(out, stemName{NamespacedName(stem), rootEntry{namespaced: true, clash: true}})
		}
		return out
	}
	if f.wantsRoot(stem) && (rootPart.any() || f != nil) {
		out = append(out, stemName{stem, rootPart})
	}
	if e.catalog && catalog && f == nil {
		out = append(out, stemName{CatalogDir + "/", rootEntry{catalog: true}})
	}
	return out
}

// DisplayName is how reports show a name: a namespaced table's object id,
// the catalog's directory name, a root table's name.
func DisplayName(name string) string {
	if name == CatalogDir+"/" {
		return CatalogDir
	}
	return ObjectID(name)
}

// IsCatalog reports whether name is the catalog's, as a scan reports it.
func IsCatalog(name string) bool {
	return strings.TrimSuffix(name, "/") == CatalogDir && strings.HasSuffix(name, "/")
}

// ResolveObjectID returns the name of the table a caller named by its
// object id ("tenant_a$inner": its directory, found in one listing of the
// root); any other name is returned as it is. ErrNotFound when no
// directory has that object id; two (a table renamed in place, and
// another created under its old name) are ambiguous: name the directory.
func (ns *Namespace) ResolveObjectID(ctx context.Context, name string) (string, error) {
	if !IsObjectID(name) {
		return name, nil
	}
	sts, err := ns.collect(ctx, []string{name}, scanPlan)
	if err != nil {
		return name, err
	}
	var dirs []string
	for _, s := range sts {
		if s.State != StateNotFound {
			dirs = append(dirs, s.Name)
		}
	}
	switch len(dirs) {
	case 0:
		return name, fmt.Errorf("%q: %w: no directory <hash>_%s/ in the root", name, ErrNotFound, name)
	case 1:
		return dirs[0], nil
	}
	return name, fmt.Errorf("%q: %w: %d directories have that object id (%s): name one of them", name, ErrInvalidName, len(dirs), strings.Join(dirs, ", "))
}
