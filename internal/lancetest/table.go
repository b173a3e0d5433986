// Package lancetest writes fake Lance tables for tests: the files of a
// table directory (<name>.lance/) in Lance's layout, with deterministic
// names and bodies (internal/faketable's, which the bench shares), into a
// store or a local directory. It knows what is inside a table, not where
// tables go: callers pass lifecycle.TableDir(name) (or its local path).
// Only tests import it (the layering test checks).
package lancetest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Table is the shape of a table directory, how many files of each kind:
// faketable.Shape, which spells their keys and bodies, with the helpers
// that write it into a store or a local directory.
type Table faketable.Shape

// Small is the least Lance writes for a table: one manifest, one
// transaction and the data files.
func Small(data int) Table { return Table{Manifests: 1, Transactions: 1, Data: data} }

// Full has a file of every kind: three manifests, two transactions, a
// deletion file, an index and the data files.
func Full(data int) Table {
	return Table{Manifests: 3, Transactions: 2, Deletions: 1, Indices: 1, Data: data}
}

// Len is the table's object count.
func (tb Table) Len() int { return faketable.Shape(tb).Len() }

// Files maps each file's key, relative to the table directory, to its body
// ("payload of <key>", data files padded to DataBytes).
func (tb Table) Files() map[string][]byte { return faketable.Shape(tb).Files() }

// Body is what Files writes at rel (before padding).
func Body(rel string) []byte { return faketable.Body(rel) }

// Keys are the table's keys relative to its directory, sorted.
func (tb Table) Keys() []string { return slices.Sorted(faketable.Shape(tb).Keys()) }

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
