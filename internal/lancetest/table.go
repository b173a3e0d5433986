// Package lancetest writes fake Lance tables for tests: the files of a
// table directory (<name>.lance/) in Lance's layout, with deterministic
// names and bodies, into a store or a local directory. It knows what is
// inside a table, not where tables go: callers pass lifecycle.TableDir(name)
// (or its local path). Only tests import it (the layering test checks).
package lancetest

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Table is the shape of a table directory: how many files of each kind.
type Table struct {
	Manifests    int // _versions/<v>.manifest
	Transactions int // _transactions/<n>-<id>.txn
	Deletions    int // _deletions/<fragment>-<version>-<id>.arrow
	Indices      int // _indices/<uuid>/index.idx
	Data         int // data/<n>-<id>.lance
	// DataBytes pads each data file's body to at least this many bytes,
	// for tests that report sizes in KiB; 0 leaves the bare body.
	DataBytes int
}

// Small is the least Lance writes for a table: one manifest, one
// transaction and the data files.
func Small(data int) Table { return Table{Manifests: 1, Transactions: 1, Data: data} }

// Full has a file of every kind: three manifests, two transactions, a
// deletion file, an index and the data files.
func Full(data int) Table {
	return Table{Manifests: 3, Transactions: 2, Deletions: 1, Indices: 1, Data: data}
}

// Len is the table's object count.
func (tb Table) Len() int {
	return tb.Manifests + tb.Transactions + tb.Deletions + tb.Indices + tb.Data
}

// Files maps each file's key, relative to the table directory, to its body
// ("payload of <key>", data files padded to DataBytes).
func (tb Table) Files() map[string][]byte {
	out := make(map[string][]byte, tb.Len())
	add := func(format string, n int, args func(i int) []any) {
		for i := range n {
			rel := fmt.Sprintf(format, args(i)...)
			out[rel] = Body(rel)
		}
	}
	add("_versions/%d.manifest", tb.Manifests, func(i int) []any { return []any{i + 1} })
	add("_transactions/%d-%08x.txn", tb.Transactions, func(i int) []any { return []any{i, 0xa1b2c3d4 + i} })
	add("_deletions/%d-1-0.arrow", tb.Deletions, func(i int) []any { return []any{i} })
	add("_indices/0c2f3e9a-1111-2222-3333-%012x/index.idx", tb.Indices, func(i int) []any { return []any{0x444455556666 + i} })
	add("data/%06d-0a1b.lance", tb.Data, func(i int) []any { return []any{i} })
	if tb.DataBytes > 0 {
		for rel, body := range out {
			if strings.HasPrefix(rel, "data/") && len(body) < tb.DataBytes {
				out[rel] = append(body, bytes.Repeat([]byte{'x'}, tb.DataBytes-len(body))...)
			}
		}
	}
	return out
}

// Body is what Files writes at rel.
func Body(rel string) []byte { return []byte("payload of " + rel) }

// Keys are the table's keys relative to its directory, sorted.
func (tb Table) Keys() []string { return slices.Sorted(maps.Keys(tb.Files())) }

// Put writes the table under dir, a key prefix ending in "/" (pass
// lifecycle.TableDir(name)), and returns its object count.
func (tb Table) Put(t testing.TB, s objstore.Store, dir string) int {
	t.Helper()
	files := tb.Files()
	keys := make([]string, 0, len(files))
	for rel := range files {
		keys = append(keys, dir+rel)
	}
	objstoretest.PutAll(t, s, keys, func(k string) []byte { return files[k[len(dir):]] })
	return len(keys)
}

// Write writes the table into the local directory dir, every file
// modified at mtime, and returns its object count and size in bytes.
func (tb Table) Write(t testing.TB, dir string, mtime time.Time) (objects, size int64) {
	t.Helper()
	for rel, body := range tb.Files() {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, body, 0o644))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
		objects++
		size += int64(len(body))
	}
	return objects, size
}
