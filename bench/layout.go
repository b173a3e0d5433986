package main

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// tableKeys are the keys of a table of shape s under dir, a key prefix
// ending in "/" (e.g. "db/"+lifecycle.TableDir(name)), in faketable's
// fixed order.
func tableKeys(dir string, s faketable.Shape) []string {
	keys := make([]string, 0, s.Len())
	for rel := range s.Keys() {
		keys = append(keys, dir+rel)
	}
	return keys
}

// writeTable creates the n objects of a table (faketable.Spread) under dir
// as files of size bytes, their modification time set to mtime (before the
// drop, or the identity fence would call the table revived). workers files
// are written in parallel.
func writeTable(dir string, n, size int, mtime time.Time, workers int) error {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	dirs := map[string]bool{}
	var paths []string
	for rel := range faketable.Spread(n).Keys() {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		dirs[filepath.Dir(p)] = true
		paths = append(paths, p)
	}
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
