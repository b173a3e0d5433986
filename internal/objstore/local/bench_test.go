package local_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// BenchmarkDeleteBatch deletes a full batch of objstore.MaxBatchDelete files
// from one directory, the shape of a purge of a table's data/ directory.
func BenchmarkDeleteBatch(b *testing.B) {
	root := b.TempDir()
	s, err := local.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, "t.lance", "data")
	keys := make([]string, objstore.MaxBatchDelete)
	for i := range keys {
		keys[i] = fmt.Sprintf("t.lance/data/%05d.lance", i)
	}
	for b.Loop() {
		b.StopTimer()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if err := os.WriteFile(filepath.Join(root, k), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := s.DeleteBatch(b.Context(), keys); err != nil {
			b.Fatal(err)
		}
	}
}
