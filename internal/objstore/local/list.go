package local

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// readChunk is how many directory entries one getdents round reads.
const readChunk = 1024

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

// level is one directory on Walk's depth-first stack.
type level struct {
	dirKey string
	names  []string
	next   int
}

// Walk visits the tree depth-first in key order, holding only the sorted
// names of the directories on the current path, and hands out pages of at
// most the page size.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	dirKey, namePrefix, err := checkPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	names, err := readNames(ctx, s.path(dirKey), namePrefix)
	if err != nil {
		return err
	}
	stack := []level{{dirKey: dirKey, names: names}}
	var page []objstore.Object
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := &stack[len(stack)-1]
		if top.next == len(top.names) {
			stack = stack[:len(stack)-1]
			continue
		}
		key := top.dirKey + top.names[top.next]
		top.next++
		if strings.HasSuffix(key, "/") {
			sub, err := readNames(ctx, s.path(key), "")
			if err != nil {
				return err
			}
			stack = append(stack, level{dirKey: key, names: sub})
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
	var names []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entries, err := f.ReadDir(readChunk)
		for _, e := range entries {
			name := e.Name()
			if !strings.HasPrefix(name, namePrefix) || strings.HasPrefix(name, tmpPrefix) {
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
			break
		}
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrNotExist) {
			return nil, nil // a file, or removed while we read it
		}
		if err != nil {
			return nil, mapErr("list", dir, err)
		}
	}
	slices.Sort(names)
	return names, nil
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
