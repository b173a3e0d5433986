package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// tableLayout spreads n objects over Lance's directories the way a table
// that has seen many small appends looks: 10% manifests, 10% transaction
// files, 5% deletion files, 5% index files (in index directories of up to
// 100 files) and the rest data files.
type tableLayout struct {
	Manifests, Transactions, Deletions, Indices, Data int
}

func layoutFor(n int) tableLayout {
	l := tableLayout{Manifests: n / 10, Transactions: n / 10, Deletions: n / 20, Indices: n / 20}
	if n < 20 { // tiny tables: a manifest and data
		l = tableLayout{Manifests: min(n, 1)}
	}
	l.Data = n - l.Manifests - l.Transactions - l.Deletions - l.Indices
	return l
}

// keys calls fn with every relative key of the table, in a fixed order.
func (l tableLayout) keys(fn func(string)) {
	for i := range l.Manifests {
		fn(fmt.Sprintf("_versions/%d.manifest", i+1))
	}
	for i := range l.Transactions {
		fn(fmt.Sprintf("_transactions/%d-%08x-7f3a-4b2c-9d1e-%012x.txn", i, i*2654435761%(1<<32), i))
	}
	for i := range l.Deletions {
		fn(fmt.Sprintf("_deletions/%d-%d-%016x.arrow", i/100, i, uint64(i)*11400714819323198485))
	}
	for i := range l.Indices {
		fn(fmt.Sprintf("_indices/%08x-1c2d-4e5f-8a9b-%012x/part-%d.idx", i/100, i/100, i%100))
	}
	for i := range l.Data {
		fn(fmt.Sprintf("data/%08x-2b3c-4d5e-9f01-%012x.lance", uint64(i)*2654435761%(1<<32), i))
	}
}

// writeTable creates the n objects of a table under dir as files of size
// bytes, their modification time set to mtime (before the drop, or the
// identity fence would call the table revived). workers files are written
// in parallel.
func writeTable(dir string, n, size int, mtime time.Time, workers int) error {
	l := layoutFor(n)
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	dirs := map[string]bool{}
	var paths []string
	l.keys(func(k string) {
		p := filepath.Join(dir, k)
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
		}
		paths = append(paths, p)
	})
	for d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	ch := make(chan string, 1024)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				if err := os.WriteFile(p, body, 0o644); err != nil {
					errs <- err
					return
				}
				if err := os.Chtimes(p, mtime, mtime); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, p := range paths {
		select {
		case ch <- p:
		case err := <-errs:
			close(ch)
			wg.Wait()
			return err
		}
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	// Directory mtimes too: versitygw reports directory objects only when
	// asked, but keep the whole tree from before the drop.
	for d := range dirs {
		for p := d; len(p) > len(dir); p = filepath.Dir(p) {
			_ = os.Chtimes(p, mtime, mtime)
		}
	}
	return nil
}

// markerBody is a due soft-delete marker: dropped two hours ago with a
// one-hour TTL (below safety.min_ttl, hence --allow-short-ttl).
func markerBody(now time.Time) []byte {
	return lifecycle.EncodeMarker(now.Add(-2*time.Hour), time.Hour)
}

// writeDueMarker writes a due marker as a file in versitygw's posix data
// directory, dated with the drop. It is not PUT through the API: due-ness
// also counts the TTL from the marker's LastModified (the store's clock,
// lifecycle's dueAt), so a marker PUT now would not be due for an hour.
func writeDueMarker(path string, now time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, markerBody(now), 0o644); err != nil {
		return err
	}
	dropped := now.Add(-2 * time.Hour)
	return os.Chtimes(path, dropped, dropped)
}

// dataMtime is when the synthetic tables were last written: before the drop.
func dataMtime(now time.Time) time.Time { return now.Add(-3 * time.Hour) }
