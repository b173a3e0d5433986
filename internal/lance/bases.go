package lance

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// This file owns what a table reads of other locations through base paths
// (Manifest.base_paths): a shallow clone made by LanceDB's cloneTable reads
// its source's data, deletion and index files through a base path naming
// the source table. The reader never cleans such a table (it is refused,
// unsupported), but it reads every version of it to the end and hands back,
// on the refusal, what each version reads elsewhere: another table of the
// root must keep those files whatever its own policy says (Lance's own
// cleanup of the source deletes them, and the clone no longer reads).

// BaseRef is what a table reads through base paths naming one location.
type BaseRef struct {
	// URI is the base path's location, as Lance writes it, normalized
	// (file:// and a trailing "/" dropped).
	URI string
	// Keys are data and deletion file keys relative to that location (a
	// dataset root), Indices index uuids (_indices/<uuid>/).
	Keys, Indices []string
	// Whole: the base path is not a dataset root, so which of the
	// location's files it reads is not known: everything there is read.
	Whole bool
}

// baseSet gathers BaseRefs while manifests are read, from several
// goroutines.
type baseSet struct {
	mu     sync.Mutex
	first  string // the first manifest found with base paths
	byURI  map[string]*BaseRef
	seenKV map[string]bool
}

// addBases records what version v reads through its base paths.
func (t *Table) addBases(v Version) {
	s := t.bases
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byURI == nil {
		s.byURI, s.seenKV = map[string]*BaseRef{}, map[string]bool{}
	}
	if s.first == "" || v.Key < s.first {
		s.first = v.Key
	}
	byID := map[uint32]*BaseRef{}
	for _, bp := range v.BasePaths {
		uri := normalizeURI(bp.Path)
		r := s.byURI[uri]
		if r == nil {
			r = &BaseRef{URI: uri}
			s.byURI[uri] = r
		}
		r.Whole = r.Whole || !bp.IsDatasetRoot
		byID[bp.ID] = r
	}
	add := func(r *BaseRef, key string, index bool) {
		if r == nil || s.seenKV[r.URI+"\x00"+key] {
			return
		}
		s.seenKV[r.URI+"\x00"+key] = true
		if index {
			r.Indices = append(r.Indices, key)
		} else {
			r.Keys = append(r.Keys, key)
		}
	}
	for _, f := range v.Fragments {
		for _, d := range dataFiles(f) {
			if d.HasBase {
				add(byID[d.BaseID], DataDir+d.Path, false)
			}
		}
		if d := f.Deletion; d != nil && d.HasBase {
			add(byID[d.BaseID], DeletionFileKey(f.ID, d.ReadVersion, d.ID, d.Bitmap), false)
		}
	}
	for _, ix := range v.Indices {
		if ix.HasBase {
			add(byID[ix.BaseID], ix.UUID, true)
		}
	}
}

// basesRefused is the refusal of a table whose versions read through base
// paths, with what they read; nil for a table that reads only its own.
func (t *Table) basesRefused() error {
	s := t.bases
	if s == nil || len(s.byURI) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BaseRef, 0, len(s.byURI))
	var uris []string
	for _, r := range s.byURI {
		slices.Sort(r.Keys)
		slices.Sort(r.Indices)
		out = append(out, *r)
		uris = append(uris, r.URI)
	}
	slices.SortFunc(out, func(a, b BaseRef) int { return strings.Compare(a.URI, b.URI) })
	slices.Sort(uris)
	return &formatError{msg: fmt.Sprintf("manifest %s has base paths (%s): files outside the table (a shallow clone?); their files are kept in the table they name",
		s.first, strings.Join(uris, ", ")), bases: out}
}

// TableURI is where Lance says the table at dir (a key prefix ending in
// "/") of the root at rootURI is, normalized as BaseRef.URI is: the
// location a base path naming it carries.
func TableURI(rootURI, dir string) string { return tableURI(rootURI, dir) }
