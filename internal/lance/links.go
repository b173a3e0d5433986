package lance

import (
	"context"
	"fmt"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file refuses a table with a directory the reader cannot see into.
// A local store never follows a symbolic link below its root: a link (or
// a file) where Lance keeps a directory is an object, and a walk of the
// directory it stands for sees nothing. The reader would then plan from
// a partial table: a linked _deletions/, data/ or _indices/ hides files a
// removed version leaves behind (the run reports "cleaned" and they stay
// behind the link for ever), and a linked _refs/tags/ or branch hides
// what protects a version, whose files a plan would then delete. Lance
// itself follows the link, so the table reads fine to its users. The
// table is refused as not fully understood (ErrUnsupported, naming the
// link); nothing of it is planned and the link is never followed.

// refsDir holds tags and branches.
const refsDir = "_refs/"

// linkedDirs are the directories at a table's top level that the reader
// walks (or walks into).
var linkedDirs = []string{VersionsDir, TransactionsDir, DataDir, IndicesDir, DeletionsDir, BlobsDir, refsDir, treeDir}

// level is one level of a listing: the names of its objects and of its
// prefixes, without the listed prefix and without a trailing "/".
type level struct{ objects, prefixes map[string]bool }

func listLevel(ctx context.Context, store objstore.Store, prefix string) (level, error) {
	l := level{objects: map[string]bool{}, prefixes: map[string]bool{}}
	err := store.List(ctx, prefix, func(p objstore.Page) error {
		for _, o := range p.Objects {
			l.objects[strings.TrimPrefix(o.Key, prefix)] = true
		}
		for _, pre := range p.Prefixes {
			l.prefixes[strings.TrimSuffix(strings.TrimPrefix(pre, prefix), "/")] = true
		}
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("list %s: %w", prefix, err)
	}
	return l, nil
}

// notADirectory is the reason a table is refused for the object at sub.
func notADirectory(sub string) error {
	return unsupportedf("%s is not a directory (a symbolic link, or a file, where Lance keeps a directory): reaper never follows a link, so it cannot see the files there; replace the link with the directory it points to", strings.TrimSuffix(sub, "/"))
}

// checkTopLevel lists the table directory once and refuses an object in
// place of a directory the reader walks. It costs one listing.
func checkTopLevel(ctx context.Context, store objstore.Store, dir string) (level, error) {
	top, err := listLevel(ctx, store, dir)
	if err != nil {
		return top, err
	}
	for _, d := range linkedDirs {
		if top.objects[strings.TrimSuffix(d, "/")] {
			return top, notADirectory(d)
		}
	}
	return top, nil
}

// checkHidden refuses what the top level does not show: an object in place
// of _refs/tags/ or _refs/branches/ (one more listing, for a table with
// refs), of a branch's tree/<name>/_versions/ or a directory above it (for
// a branch without versions only), or of an index directory a version
// references (no request: _indices/ was walked).
func (t *Table) checkHidden(ctx context.Context, store objstore.Store, top level) error {
	if top.prefixes[strings.TrimSuffix(refsDir, "/")] {
		refs, err := listLevel(ctx, store, t.Dir+refsDir)
		if err != nil {
			return err
		}
		for _, d := range []string{tagsDir, branchesDir} {
			if refs.objects[strings.TrimSuffix(strings.TrimPrefix(d, refsDir), "/")] {
				return notADirectory(d)
			}
		}
	}
	for _, b := range t.Branches {
		if len(b.Versions) > 0 {
			continue
		}
		if err := objectOnPath(ctx, store, t.Dir, treeDir+b.Name+"/"+VersionsDir); err != nil {
			return err
		}
	}
	inIndices := map[string]bool{}
	for _, o := range t.Objects {
		if rest, ok := strings.CutPrefix(o.Key, IndicesDir); ok && !strings.Contains(rest, "/") {
			inIndices[rest] = true
		}
	}
	if len(inIndices) == 0 {
		return nil
	}
	check := func(indices []string) error {
		for _, ix := range indices {
			if inIndices[ix] {
				return notADirectory(IndicesDir + ix)
			}
		}
		return nil
	}
	for _, vs := range [][]Version{t.Versions, t.Detached} {
		for _, v := range vs {
			_, ixs := v.Refs()
			if err := check(ixs); err != nil {
				return err
			}
		}
	}
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			_, ixs := t.MainRefs(v)
			if err := check(ixs); err != nil {
				return err
			}
		}
	}
	return nil
}

// objectOnPath refuses an object at any directory of sub (relative to
// dir, ending in "/"), listing one level at a time from dir down to the
// first directory that does not exist.
func objectOnPath(ctx context.Context, store objstore.Store, dir, sub string) error {
	segs := strings.Split(strings.TrimSuffix(sub, "/"), "/")
	prefix := dir
	for i, seg := range segs {
		l, err := listLevel(ctx, store, prefix)
		if err != nil {
			return err
		}
		if l.objects[seg] {
			return notADirectory(strings.Join(segs[:i+1], "/"))
		}
		if !l.prefixes[seg] {
			return nil
		}
		prefix += seg + "/"
	}
	return nil
}
