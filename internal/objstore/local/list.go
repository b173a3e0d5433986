package local

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// direntChunk is how many directory entries one getdents round reads.
const direntChunk = 1024

// List lists one directory level. A prefix not ending in "/" matches names
// starting with its last segment, as on S3. Objects and prefixes both count
// toward the page size.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	dirKey, namePrefix, err := checkPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	names, err := readNames(ctx, s.path(dirKey), namePrefix)
	if err != nil {
		return err
	}
	var page objstore.Page
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(name, "/") {
			page.Prefixes = append(page.Prefixes, dirKey+name)
		} else {
			obj, ok, err := s.stat(dirKey + name)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			page.Objects = append(page.Objects, obj)
		}
		if len(page.Objects)+len(page.Prefixes) >= s.pageSize {
			if err := fn(page); err != nil {
				return err
			}
			page = objstore.Page{}
		}
	}
	if len(page.Objects)+len(page.Prefixes) > 0 {
		return fn(page)
	}
	return nil
}

// sortLimit is the largest directory Walk reads whole and sorts. A larger
// one (a table's data/ can hold a million files) is streamed in directory
// order, a chunk at a time, so memory stays flat: a purge needs every key,
// not their order.
const sortLimit = 10000

// level is one directory on Walk's depth-first stack: its sorted names, or
// for a huge directory the open handle and the current chunk.
type level struct {
	dirKey string
	names  []string
	next   int
	stream *os.File // non-nil while a huge directory is being streamed
	prefix string   // name filter of the walk's first directory
}

// Walk visits the tree depth-first. Directories of up to sortLimit entries
// are visited in key order; larger ones in directory order, read in chunks
// (see sortLimit). It holds at most sortLimit names per directory on the
// current path and hands out pages of at most the page size.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	dirKey, namePrefix, err := checkPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	root, err := openLevel(ctx, s.path(dirKey), dirKey, namePrefix)
	if err != nil {
		return err
	}
	stack := []level{root}
	defer func() {
		for _, l := range stack {
			if l.stream != nil {
				l.stream.Close()
			}
		}
	}()
	var page []objstore.Object
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := &stack[len(stack)-1]
		if top.next == len(top.names) && top.stream != nil {
			if err := top.refill(ctx); err != nil {
				return err
			}
		}
		if top.next == len(top.names) {
			stack = stack[:len(stack)-1]
			continue
		}
		key := top.dirKey + top.names[top.next]
		top.next++
		if strings.HasSuffix(key, "/") {
			sub, err := openLevel(ctx, s.path(key), key, "")
			if err != nil {
				return err
			}
			stack = append(stack, sub)
			continue
		}
		obj, ok, err := s.stat(key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		page = append(page, obj)
		if len(page) >= s.pageSize {
			if err := fn(page); err != nil {
				return err
			}
			page = nil
		}
	}
	if len(page) > 0 {
		return fn(page)
	}
	return nil
}

// openLevel reads up to sortLimit+1 entries of dir: all of them sorted when
// that is the whole directory, otherwise the first chunk unsorted with the
// handle kept open for refill.
func openLevel(ctx context.Context, dir, dirKey, namePrefix string) (level, error) {
	f, err := os.Open(dir)
	if isNotFound(err) {
		return level{dirKey: dirKey}, nil
	}
	if err != nil {
		return level{}, mapErr("list", dir, err)
	}
	names, eof, err := readChunk(ctx, f, dir, namePrefix, sortLimit+1)
	if err != nil || eof {
		f.Close()
		slices.Sort(names)
		return level{dirKey: dirKey, names: names}, err
	}
	return level{dirKey: dirKey, names: names, stream: f, prefix: namePrefix}, nil
}

// refill reads the next chunk of a streamed directory.
func (l *level) refill(ctx context.Context) error {
	names, eof, err := readChunk(ctx, l.stream, l.dirKey, l.prefix, direntChunk)
	if err != nil || eof {
		l.stream.Close()
		l.stream = nil
	}
	l.names, l.next = names, 0
	return err
}

// checkPrefix validates a listing prefix and splits it into the directory
// key (ending in "/" or empty) and the name prefix within that directory.
func checkPrefix(ctx context.Context, prefix string) (dirKey, namePrefix string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return "", "", err
	}
	i := strings.LastIndexByte(prefix, '/')
	return prefix[:i+1], prefix[i+1:], nil
}

// readNames returns the entries of dir starting with namePrefix, sorted in
// key order: directories carry a trailing "/" so "a.lance/x" sorts after
// "a.lance.deleted", as the keys do. Temp files and entries that are neither
// regular files nor directories are skipped. A missing dir has no entries.
func readNames(ctx context.Context, dir, namePrefix string) ([]string, error) {
	f, err := os.Open(dir)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr("list", dir, err)
	}
	defer f.Close()
	names, _, err := readChunk(ctx, f, dir, namePrefix, -1)
	slices.Sort(names)
	return names, err
}

// readChunk reads at least max directory entries (all when max < 0) or up to
// the end, keeping names that start with namePrefix as readNames describes;
// eof reports that the directory is exhausted.
func readChunk(ctx context.Context, f *os.File, dir, namePrefix string, max int) (names []string, eof bool, err error) {
	for max < 0 || len(names) < max {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		entries, err := f.ReadDir(direntChunk)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, tmpPrefix) {
				removeStaleTemp(dir, e)
				continue
			}
			if !strings.HasPrefix(name, namePrefix) {
				continue
			}
			switch {
			case e.IsDir():
				names = append(names, name+"/")
			case e.Type().IsRegular():
				names = append(names, name)
			}
		}
		if errors.Is(err, io.EOF) {
			return names, true, nil
		}
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrNotExist) {
			return nil, true, nil // a file, or removed while we read it
		}
		if err != nil {
			return nil, false, mapErr("list", dir, err)
		}
	}
	return names, false, nil
}

// removeStaleTemp removes a temp file older than StaleTempAge, best effort:
// a failure only leaves it for the next listing.
func removeStaleTemp(dir string, e fs.DirEntry) {
	if !e.Type().IsRegular() {
		return
	}
	info, err := e.Info()
	if err != nil || time.Since(info.ModTime()) < StaleTempAge {
		return
	}
	_ = os.Remove(filepath.Join(dir, e.Name()))
}

// stat describes a listed file; ok is false if it vanished since the
// directory was read.
func (s *Store) stat(key string) (objstore.Object, bool, error) {
	fi, err := os.Lstat(s.path(key))
	if isNotFound(err) {
		return objstore.Object{}, false, nil
	}
	if err != nil {
		return objstore.Object{}, false, mapErr("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return objstore.Object{}, false, nil
	}
	return objectOf(key, fi), true, nil
}
