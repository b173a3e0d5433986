package lance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// namespaceTable is the directory of a V2 namespace's own catalog table: the
// reader never reads (nor lets anyone plan deletions in) anything under it.
const namespaceTable = "__manifest"

// deregisteredFile, at a table's top level, is LanceDB's mark of a table
// deregistered from its namespace, its data kept for re-registration
// (lance-namespace's directory catalog spec): the reader refuses it, so
// nothing of it is ever planned.
const deregisteredFile = ".lance-deregistered"

// Version is one manifest: an attached version of main, a detached
// version, or a version of a branch.
//
// ReadTable keeps a version of main or a detached version compact: once its
// manifest is checked, what it references is kept as Refs returns it and
// the manifest's file lists (Fragments, Indices, BasePaths) are dropped: a
// dry run of a table of 10,000 versions, each version's fragment list kept
// whole, peaked at 500 MB; kept compact, at 190 MB (intern.go). A branch's
// versions keep their whole manifests (MainRefs reads them).
type Version struct {
	Number uint64
	// Key is the manifest's key relative to the table directory.
	Key          string
	Size         int64
	LastModified time.Time
	Manifest
	refs *versionRefs
}

// Table is everything the reader learned about one table directory, read
// once: a retention plan is computed from it without further requests.
type Table struct {
	// Dir is the table directory, a key prefix ending in "/".
	Dir string
	// URI is the table's location as Lance writes it in base paths.
	URI string
	// Versions are main's attached versions, ascending.
	Versions []Version
	// Detached are the detached versions (_versions/d{n}.manifest).
	Detached []Version
	// Objects is every object under the directories Lance's cleanup
	// manages (VersionsDir, TransactionsDir, DataDir, IndicesDir,
	// DeletionsDir), keys relative to Dir, from one walk of each.
	Objects  []objstore.Object
	Tags     []Tag
	Branches []Branch
	// RefsListed is the listing of _refs/ the tags and branches were read
	// from (branches, then tags: ListRefs' order).
	RefsListed []objstore.Object
	names      *names
	// bases collects what versions read through base paths (bases.go).
	bases *baseSet
}

// Latest is main's newest version.
func (t *Table) Latest() Version { return t.Versions[len(t.Versions)-1] }

// managedDirs are walked once each; BlobsDir only to refuse a table that has
// managed blobs.
var managedDirs = []string{VersionsDir, TransactionsDir, DataDir, IndicesDir, DeletionsDir, BlobsDir}

// ReadTable lists and reads one table directory (dir, ending in "/"): one
// listing of its top level (and of _refs/, if any) to refuse a linked
// directory (links.go), one walk of each managed directory the top level
// shows, of _refs/ (when it shows one) and of each branch's _versions/,
// and one read of every manifest, tag and branch file,
// ReadConcurrency manifests at a time. A table it does not fully understand
// is an *UnsupportedError (errors.Is(err, ErrUnsupported)); any other error
// is a failure to read it.
func ReadTable(ctx context.Context, store objstore.Store, dir string) (*Table, error) {
	return ReadTableKnown(ctx, store, dir, nil)
}

// ReadTableKnown is ReadTable that takes a manifest from prev, the same
// table read earlier (nil: none), instead of reading it again while it is
// listed as the same object (key, size, LastModified): manifests are
// written once, so a process that reads a table pass after pass reads only
// those written since. Every directory is listed afresh.
func ReadTableKnown(ctx context.Context, store objstore.Store, dir string, prev *Table) (*Table, error) {
	var known map[string]Version
	if prev != nil && prev.Dir == dir {
		known = prev.known()
	}
	t, err := again(ctx, func() (*Table, error) { return readTable(ctx, store, dir, known) })
	var fe *formatError
	if errors.As(err, &fe) {
		return nil, &UnsupportedError{Dir: dir, Reason: fe.msg, Bases: fe.bases}
	}
	return t, err
}

func readTable(ctx context.Context, store objstore.Store, dir string, known map[string]Version) (*Table, error) {
	if !strings.HasSuffix(dir, "/") || objstore.ValidateKey(dir) != nil {
		return nil, fmt.Errorf("table directory %q: want a key prefix ending in \"/\", such as \"t.lance/\"", dir)
	}
	if slices.Contains(strings.Split(dir, "/"), namespaceTable) {
		return nil, unsupportedf("%s is the namespace's own table: never touched", namespaceTable)
	}
	t := &Table{Dir: dir, URI: tableURI(store.URI(), dir), names: newNames(), bases: &baseSet{}}
	// First: a linked _versions/ would otherwise read as "no versions".
	top, err := checkTopLevel(ctx, store, dir)
	if err != nil {
		return nil, err
	}
	if top.objects[deregisteredFile] {
		return nil, unsupportedf("deregistered (%s): LanceDB keeps its data for re-registration; never cleaned", deregisteredFile)
	}
	listed, err := t.readManaged(ctx, store, known, top)
	if err != nil {
		return nil, err
	}
	for _, objs := range listed {
		t.Objects = append(t.Objects, objs...)
	}
	if top.prefixes[strings.TrimSuffix(refsDir, "/")] {
		// No _refs/ at the top level: no tag or branch to read.
		if err := t.readRefs(ctx, store); err != nil {
			return nil, err
		}
	}
	if err := t.checkHidden(ctx, store, top); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, t.basesRefused()
}

// readAttempts bounds how often a read that raced a writer is tried.
const readAttempts = 3

// again reads a table, and reads it again when a file it listed was gone
// when it read it: a writer's own cleanup, another reaper's retention or a
// rename (migrateManifestPathsV2) removed it between the listing and the
// read. The table changed; the next listing shows it as it is now. After
// readAttempts tries the last error is returned.
func again(ctx context.Context, read func() (*Table, error)) (*Table, error) {
	var t *Table
	var err error
	for range readAttempts {
		if t, err = read(); !errors.Is(err, objstore.ErrNotFound) || ctx.Err() != nil {
			return t, err
		}
	}
	return t, err
}

// readManaged walks the managed directories the table's top level shows
// (top), all at once, and reads the
// manifests as soon as _versions/ is listed, while the others are still
// being listed: walked one after the other, a history whose _deletions/
// held 75,000 files spent half its read listing it before the first
// manifest was asked for. It returns each directory's listing, in
// managedDirs' order.
func (t *Table) readManaged(ctx context.Context, store objstore.Store, known map[string]Version, top level) ([][]objstore.Object, error) {
	g, ctx := errgroup.WithContext(ctx)
	listed := make([][]objstore.Object, len(managedDirs))
	for i, d := range managedDirs {
		if d != VersionsDir && !top.prefixes[strings.TrimSuffix(d, "/")] {
			// Not at the top level: nothing to walk (a directory a writer
			// creates since holds files no plan made now names).
			continue
		}
		g.Go(func() error {
			objs, err := walk(ctx, store, t.Dir, d)
			if err != nil {
				return err
			}
			if err := checkManaged(d, objs); err != nil {
				return err
			}
			listed[i] = objs
			if d == VersionsDir {
				return t.readVersions(ctx, store, objs, known)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return listed, nil
}

// walk lists everything under dir+sub, keys relative to dir.
func walk(ctx context.Context, store objstore.Store, dir, sub string) ([]objstore.Object, error) {
	var out []objstore.Object
	err := store.Walk(ctx, dir+sub, func(objs []objstore.Object) error {
		for _, o := range objs {
			o.Key = strings.TrimPrefix(o.Key, dir)
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s%s: %w", dir, sub, err)
	}
	return out, nil
}

// checkManaged refuses what a managed directory must not hold for the
// reader to account for every file from manifests alone. A subdirectory of
// _versions/ is refused unless its name starts with ".tmp": Lance's cleanup
// treats every file whose path starts with "_versions/.tmp" as a temporary
// manifest (its test cleanup_preserves_unmanaged_dirs_and_files deletes
// _versions/.tmp/orphan), so the reader lists them as such.
func checkManaged(sub string, objs []objstore.Object) error {
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, sub)
		switch {
		case sub == BlobsDir:
			return unsupportedf("managed blob file %s: blobs are referenced from column values, not from manifests", o.Key)
		case sub == DataDir && strings.Contains(rest, "/"):
			return unsupportedf("%s is in a subdirectory of %s (a blob sidecar?): not referenced from manifests", o.Key, DataDir)
		case sub == VersionsDir && strings.Contains(rest, "/") && !strings.HasPrefix(rest, tempPrefix):
			return unsupportedf("%s: %s holds a subdirectory", o.Key, VersionsDir)
		}
	}
	return nil
}

// readVersions classifies the _versions/ listing and reads every manifest.
func (t *Table) readVersions(ctx context.Context, store objstore.Store, objs []objstore.Object, known map[string]Version) error {
	seen := map[uint64]string{}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, VersionsDir)
		kind, n, _ := versionName(name)
		v := Version{Number: n, Key: o.Key, Size: o.Size, LastModified: o.LastModified}
		switch kind {
		case nameVersion:
			if other, dup := seen[n]; dup {
				return unsupportedf("version %d has two manifests: %s and %s", n, other, o.Key)
			}
			seen[n] = o.Key
			t.Versions = append(t.Versions, v)
		case nameDetached:
			t.Detached = append(t.Detached, v)
		case nameHint, nameTemp, nameStaging:
		default:
			return unsupportedf("%s: not a manifest name the reader knows", o.Key)
		}
	}
	if len(t.Versions) == 0 {
		return unsupportedf("no versions in %s", VersionsDir)
	}
	slices.SortFunc(t.Versions, func(a, b Version) int { return cmp.Compare(a.Number, b.Number) })
	if err := readManifests(ctx, store, t.Dir, t.Versions, known, t.keepMain); err != nil {
		return err
	}
	return readManifests(ctx, store, t.Dir, t.Detached, known, t.keepDetached)
}

// Refresh reads the table's versions and refs again, as a deleting pass
// does just before it deletes: one listing of _versions/, every manifest
// not read before (a version committed since; manifests are written once,
// so one already read is kept), and the tags and branches with their
// manifests. The managed directories' listings (Objects) are kept as they
// were: a file written since is in no plan made from them. A table that no
// longer reads is an *UnsupportedError, as from ReadTable.
func (t *Table) Refresh(ctx context.Context, store objstore.Store) (*Table, error) {
	nt, err := again(ctx, func() (*Table, error) { return t.refresh(ctx, store) })
	var fe *formatError
	if errors.As(err, &fe) {
		return nil, &UnsupportedError{Dir: t.Dir, Reason: fe.msg}
	}
	return nt, err
}

func (t *Table) refresh(ctx context.Context, store objstore.Store) (*Table, error) {
	known := t.known()
	objs, err := walk(ctx, store, t.Dir, VersionsDir)
	if err != nil {
		return nil, err
	}
	if err := checkManaged(VersionsDir, objs); err != nil {
		return nil, err
	}
	nt := &Table{Dir: t.Dir, URI: t.URI, Objects: t.Objects, names: t.names, bases: &baseSet{}}
	if err := nt.readVersions(ctx, store, objs, known); err != nil {
		return nil, err
	}
	if err := nt.readRefs(ctx, store); err != nil {
		return nil, err
	}
	if err := nt.check(); err != nil {
		return nil, err
	}
	return nt, nt.basesRefused()
}

// known are the versions of main and the detached ones read, by key.
func (t *Table) known() map[string]Version {
	known := map[string]Version{}
	for _, vs := range [][]Version{t.Versions, t.Detached} {
		for _, v := range vs {
			known[v.Key] = v
		}
	}
	return known
}

// RefreshRefs reads the table's tags and branches again (with each
// branch's manifests), and nothing else: a deleting pass does it before
// every batch of manifests it deletes, so a version tagged or branched from
// mid-run is never one whose manifest it deletes. A ref that no longer
// reads is an *UnsupportedError, as from ReadTable.
func (t *Table) RefreshRefs(ctx context.Context, store objstore.Store) (*Table, error) {
	nt := *t
	nt.Tags, nt.Branches = nil, nil
	err := nt.readRefs(ctx, store)
	if err == nil {
		err = nt.check()
	}
	var fe *formatError
	if errors.As(err, &fe) {
		return nil, &UnsupportedError{Dir: t.Dir, Reason: fe.msg}
	}
	if err != nil {
		return nil, err
	}
	return &nt, nil
}

// readManifests reads and decodes each version's manifest in place,
// ReadConcurrency at a time, taking one already read from known (by key),
// and hands each to keep, if set, as soon as it is decoded; the first error
// stops the rest.
func readManifests(ctx context.Context, store objstore.Store, dir string, vs []Version, known map[string]Version, keep func(*Version) error) error {
	return forEach(ctx, len(vs), func(ctx context.Context, i int) error {
		v := &vs[i]
		if k, ok := known[v.Key]; ok && sameObject(k, *v) {
			v.Manifest, v.refs = k.Manifest, k.refs
			return nil
		}
		body, err := get(ctx, store, dir+v.Key, MaxManifestBytes)
		if err != nil {
			return err
		}
		m, err := DecodeManifestFile(body)
		if err != nil {
			return unsupportedf("manifest %s: %v", v.Key, err)
		}
		if err := checkFlags(m); err != nil {
			return unsupportedf("manifest %s: %v", v.Key, err)
		}
		v.Manifest = m
		if keep != nil {
			return keep(v)
		}
		return nil
	})
}

// sameObject reports whether a manifest listed again is the one read
// before: the same size and LastModified (manifests are written once, but
// a table dropped and created again under the same name writes new ones
// at the same keys).
func sameObject(read, listed Version) bool {
	return read.Size == listed.Size && read.LastModified.Equal(listed.LastModified)
}

// forEach runs fn for 0..n-1, ReadConcurrency at a time, and returns the
// first error (the others are cancelled).
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, ReadConcurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// tableURI is where Lance says the table is: the root URI and the table
// directory, local roots as a plain path (as LanceDB writes base paths).
func tableURI(root, dir string) string {
	return normalizeURI(strings.TrimSuffix(root, "/") + "/" + strings.TrimSuffix(dir, "/"))
}

// normalizeURI makes two spellings of one location compare equal: a local
// path with or without file://, escaped or not, without a trailing "/".
func normalizeURI(s string) string {
	if rest, ok := strings.CutPrefix(s, "file://"); ok {
		if u, err := url.PathUnescape(rest); err == nil {
			rest = u
		}
		s = rest
	}
	return strings.TrimSuffix(s, "/")
}
