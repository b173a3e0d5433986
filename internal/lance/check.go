package lance

import (
	"slices"
	"strings"
)

// check refuses what the reader read of the branches but cannot vouch
// for: a manifest whose version is not the one its name says, one that
// references a location outside the table. (A version of main or a
// detached one is checked as it is read: keepMain, keepDetached.)
func (t *Table) check() error {
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			if v.Manifest.Version != v.Number {
				return unsupportedf("manifest %s holds version %d", v.Key, v.Manifest.Version)
			}
			if err := t.checkBranchBases(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepMain checks a version of main just read (its manifest holds the
// version its name says, belongs to main and puts no file elsewhere), then
// keeps it compact.
func (t *Table) keepMain(v *Version) error {
	if v.Manifest.Version != v.Number {
		return unsupportedf("manifest %s holds version %d", v.Key, v.Manifest.Version)
	}
	if v.Branch != "" {
		return unsupportedf("manifest %s of main belongs to branch %q", v.Key, v.Branch)
	}
	return t.keepDetached(v)
}

// keepDetached checks a detached version just read (it puts no file
// elsewhere), then keeps it compact: what it references, interned in the
// table's names, in place of its file lists.
func (t *Table) keepDetached(v *Version) error {
	if len(v.BasePaths) > 0 {
		// A shallow clone (or imported files): the table is refused once
		// read, and what it reads of other locations is kept for them.
		t.addBases(*v)
	} else if err := ownFilesOnly(*v); err != nil {
		return err
	}
	keys, indices := v.Refs()
	v.refs = &versionRefs{names: t.names, keys: t.names.ids(keys), indices: t.names.ids(indices)}
	v.Fragments, v.Indices, v.BasePaths = nil, nil, nil
	return nil
}

// ownFilesOnly refuses a manifest with base paths: its files (or some of
// them) live outside the table (a shallow clone, imported files), which
// the reader does not follow.
func ownFilesOnly(v Version) error {
	if len(v.BasePaths) > 0 {
		return unsupportedf("manifest %s has base paths (%s): files outside the table", v.Key, v.BasePaths[0].Path)
	}
	for _, f := range v.Fragments {
		for _, d := range dataFiles(f) {
			if d.HasBase {
				return unsupportedf("manifest %s: data file %s is under base path %d", v.Key, d.Path, d.BaseID)
			}
		}
		if f.Deletion != nil && f.Deletion.HasBase {
			return unsupportedf("manifest %s: deletion file of fragment %d is under base path %d", v.Key, f.ID, f.Deletion.BaseID)
		}
	}
	for _, ix := range v.Indices {
		if ix.HasBase {
			return unsupportedf("manifest %s: index %s is under base path %d", v.Key, ix.UUID, ix.BaseID)
		}
	}
	return nil
}

// checkBranchBases refuses a branch manifest whose base paths are not this
// table (main) or one of its branches, or whose files name a base path it
// does not declare.
func (t *Table) checkBranchBases(v Version) error {
	ids := map[uint32]bool{}
	for _, bp := range v.BasePaths {
		p := normalizeURI(bp.Path)
		if !bp.IsDatasetRoot || (p != t.URI && !strings.HasPrefix(p, t.URI+"/"+treeDir)) {
			return unsupportedf("branch manifest %s: base path %d (%s) is outside the table %s", v.Key, bp.ID, bp.Path, t.URI)
		}
		ids[bp.ID] = true
	}
	bad := func(has bool, id uint32) bool { return has && !ids[id] }
	for _, f := range v.Fragments {
		for _, d := range dataFiles(f) {
			if bad(d.HasBase, d.BaseID) {
				return unsupportedf("branch manifest %s: data file %s names undeclared base path %d", v.Key, d.Path, d.BaseID)
			}
		}
		if f.Deletion != nil && bad(f.Deletion.HasBase, f.Deletion.BaseID) {
			return unsupportedf("branch manifest %s: deletion file of fragment %d names undeclared base path %d", v.Key, f.ID, f.Deletion.BaseID)
		}
	}
	for _, ix := range v.Indices {
		if bad(ix.HasBase, ix.BaseID) {
			return unsupportedf("branch manifest %s: index %s names undeclared base path %d", v.Key, ix.UUID, ix.BaseID)
		}
	}
	return nil
}

// MainRefs are the files of main a branch manifest references through a
// base path naming this table: data and deletion file keys, and index
// uuids.
func (t *Table) MainRefs(v Version) (keys []string, indices []string) {
	main := map[uint32]bool{}
	for _, bp := range v.BasePaths {
		if normalizeURI(bp.Path) == t.URI {
			main[bp.ID] = true
		}
	}
	for _, f := range v.Fragments {
		for _, d := range dataFiles(f) {
			if d.HasBase && main[d.BaseID] {
				keys = append(keys, DataDir+d.Path)
			}
		}
		if d := f.Deletion; d != nil && d.HasBase && main[d.BaseID] {
			keys = append(keys, DeletionFileKey(f.ID, d.ReadVersion, d.ID, d.Bitmap))
		}
	}
	for _, ix := range v.Indices {
		if ix.HasBase && main[ix.BaseID] {
			indices = append(indices, ix.UUID)
		}
	}
	return keys, indices
}

// Refs are the files a version of main (or a detached version) references,
// keys relative to the table directory: data files and overlays under
// data/, deletion files, the transaction file, external row-id and
// row-version files; and the uuids of its indices (each the whole
// _indices/<uuid>/ directory).
func (v Version) Refs() (keys []string, indices []string) {
	if v.refs != nil {
		return v.refs.names.strings(v.refs.keys), v.refs.names.strings(v.refs.indices)
	}
	for _, f := range v.Fragments {
		for _, d := range dataFiles(f) {
			keys = append(keys, DataDir+d.Path)
		}
		if d := f.Deletion; d != nil {
			keys = append(keys, DeletionFileKey(f.ID, d.ReadVersion, d.ID, d.Bitmap))
		}
		keys = append(keys, f.External...)
	}
	if v.TransactionFile != "" {
		keys = append(keys, TransactionsDir+v.TransactionFile)
	}
	for _, ix := range v.Indices {
		indices = append(indices, ix.UUID)
	}
	return keys, indices
}

// dataFiles are a fragment's data files and overlay files.
func dataFiles(f Fragment) []DataFile { return slices.Concat(f.Files, f.Overlays) }
