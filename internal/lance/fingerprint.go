package lance

import (
	"context"
	"encoding/binary"
	"hash/fnv"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how a process tells, with one listing, that a table's
// versions or refs are as it read them: a fingerprint of a listing (every
// key with its size and LastModified). Manifests and refs are written, not
// edited, so a listing that fingerprints alike holds the same ones.

// Fingerprint sums a listing: keys, sizes and LastModified to the
// millisecond, in the listing's order (the store's, sorted).
func Fingerprint(objs []objstore.Object) uint64 {
	h := fnv.New64a()
	var n [16]byte
	for _, o := range objs {
		_, _ = h.Write([]byte(o.Key))
		binary.LittleEndian.PutUint64(n[:8], uint64(o.Size))
		binary.LittleEndian.PutUint64(n[8:], uint64(o.LastModified.UnixMilli()))
		_, _ = h.Write(n[:])
	}
	return h.Sum64()
}

// ListVersions lists the table's _versions/ (one request for up to a
// page of manifests), keys relative to dir.
func ListVersions(ctx context.Context, store objstore.Store, dir string) ([]objstore.Object, error) {
	return walk(ctx, store, dir, VersionsDir)
}

// ListRefs lists the table's _refs/ (tags and branches), keys relative to
// dir.
func ListRefs(ctx context.Context, store objstore.Store, dir string) ([]objstore.Object, error) {
	return walk(ctx, store, dir, refsDir)
}

// VersionsListed is the part of t.Objects that lists _versions/, as
// ListVersions returns it.
func (t *Table) VersionsListed() []objstore.Object {
	var out []objstore.Object
	for _, o := range t.Objects {
		if len(o.Key) >= len(VersionsDir) && o.Key[:len(VersionsDir)] == VersionsDir {
			out = append(out, o)
		}
	}
	return out
}

// ManifestsOnly is t with its versions alone (main and detached, each kept
// compact), for a later ReadTableKnown: no listings, tags or branches.
func (t *Table) ManifestsOnly() *Table {
	return &Table{Dir: t.Dir, URI: t.URI, Versions: t.Versions, Detached: t.Detached, names: t.names}
}
