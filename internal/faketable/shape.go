// Package faketable names and fills the files of a fake Lance table in
// Lance's directory layout (_versions/, _transactions/, _deletions/,
// _indices/<uuid>/, data/), for the benchmarks and the tests. It is the one
// place that spells those keys, so the bench's workloads and the tests'
// tables cannot drift apart. It knows nothing of stores, of where a table
// goes (callers prefix lifecycle.TableDir(name)) or of reaper's lifecycle,
// and imports only the standard library, so that a program (the bench) and
// test support (internal/lancetest) can both use it.
package faketable

import (
	"bytes"
	"fmt"
	"iter"
	"strings"
)

// Shape is how many files of each kind a table directory holds. Every key
// is relative to the table directory and the same for the same Shape.
type Shape struct {
	// Latest adds _latest.manifest, the pointer to the newest version that
	// older Lance releases keep at the top of the table directory: one
	// file and no subdirectory, the least a table can be.
	Latest       bool
	Manifests    int // _versions/<v>.manifest
	Transactions int // _transactions/<n>-<id>.txn
	Deletions    int // _deletions/<fragment>-<version>-<id>.arrow
	Indices      int // index files: _indices/<uuid>/index.idx, or IndexFiles to a directory
	// IndexFiles is how many index files share an index directory, as
	// _indices/<uuid>/part-<i>.idx, the last directory taking the rest;
	// 0 or 1 gives each index file a directory of its own (index.idx).
	IndexFiles int
	Data       int // data/<n>-<id>.lance
	// DataBytes pads each data file's body to at least this many bytes,
	// for tests that report sizes in KiB; 0 leaves the bare body.
	DataBytes int
}

// Len is the table's object count.
func (s Shape) Len() int {
	n := s.Manifests + s.Transactions + s.Deletions + s.Indices + s.Data
	if s.Latest {
		n++
	}
	return n
}

// Keys yields every file's key, relative to the table directory, in a
// fixed order: _latest.manifest, then manifests, transactions, deletion
// files, index files and data files, each kind by its number.
func (s Shape) Keys() iter.Seq[string] {
	return func(yield func(string) bool) {
		kinds := []struct {
			n   int
			key func(i int) string
		}{
			{s.latest(), func(int) string { return "_latest.manifest" }},
			{s.Manifests, func(i int) string { return fmt.Sprintf("_versions/%d.manifest", i+1) }},
			{s.Transactions, func(i int) string { return fmt.Sprintf("_transactions/%d-%08x.txn", i, 0xa1b2c3d4+i) }},
			{s.Deletions, func(i int) string { return fmt.Sprintf("_deletions/%d-1-0.arrow", i) }},
			{s.Indices, s.indexKey},
			{s.Data, func(i int) string { return fmt.Sprintf("data/%06d-0a1b.lance", i) }},
		}
		for _, k := range kinds {
			for i := range k.n {
				if !yield(k.key(i)) {
					return
				}
			}
		}
	}
}

func (s Shape) latest() int {
	if s.Latest {
		return 1
	}
	return 0
}

// indexKey is the key of the i-th index file.
func (s Shape) indexKey(i int) string {
	const dir = "_indices/0c2f3e9a-1111-2222-3333-%012x/"
	if s.IndexFiles <= 1 {
		return fmt.Sprintf(dir+"index.idx", 0x444455556666+i)
	}
	return fmt.Sprintf(dir+"part-%d.idx", 0x444455556666+i/s.IndexFiles, i%s.IndexFiles)
}

// Files maps each file's key, relative to the table directory, to its body
// (Body, data files padded to DataBytes).
func (s Shape) Files() map[string][]byte {
	out := make(map[string][]byte, s.Len())
	for rel := range s.Keys() {
		body := Body(rel)
		if strings.HasPrefix(rel, "data/") && len(body) < s.DataBytes {
			body = append(body, bytes.Repeat([]byte{'x'}, s.DataBytes-len(body))...)
		}
		out[rel] = body
	}
	return out
}

// Body is the unpadded body of the file at rel: "payload of <rel>", so a
// test can derive a file's size from its key.
func Body(rel string) []byte { return []byte("payload of " + rel) }
