package local

import (
	"context"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var _ objstore.DirectoryScan = (*Store)(nil)

// ListScansDirectory is true: List reads every entry of the directory to
// find those with its prefix (getdents has no index by name).
func (s *Store) ListScansDirectory() bool { return true }

// List lists one directory level. A prefix not ending in "/" matches names
// starting with its last segment, as on S3. Objects and prefixes both count
// toward the page size. A subdirectory is a prefix; every other entry (a
// file, a symbolic link, a fifo, a socket, a device) is an object described
// by lstat. A prefix that crosses a link, a file or nothing has no entries.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	dirKey, namePrefix, err := checkPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	c, err := s.openChain(dirKey, crossMounts)
	if isNoDir(err) {
		return nil
	}
	if err != nil {
		return wrapErr("list", prefix, err)
	}
	defer c.close()
	names, _, err := newDirReader(c.fd()).readChunk(ctx, namePrefix, -1)
	if err != nil {
		return wrapErr("list", prefix, err)
	}
	slices.Sort(names)
	var page objstore.Page
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(name, "/") {
			page.Prefixes = append(page.Prefixes, dirKey+name)
		} else {
			obj, ok, err := statAt(c.fd(), dirKey, name)
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

// checkPrefix validates a listing prefix and splits it into the directory
// key (ending in "/" or empty) and the name prefix within that directory.
func checkPrefix(ctx context.Context, prefix string) (dirKey, namePrefix string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return "", "", err
	}
	dirKey, namePrefix = splitKey(prefix)
	return dirKey, namePrefix, nil
}

// statAt describes the listed entry name of the directory dirfd (key
// dirKey) without following it; ok is false if it vanished since the
// directory was read or became a directory.
func statAt(dirfd int, dirKey, name string) (objstore.Object, bool, error) {
	st, err := lstatAt(dirfd, name)
	if isNotFound(err) {
		return objstore.Object{}, false, nil
	}
	if err != nil {
		return objstore.Object{}, false, mapErr("stat", dirKey+name, err)
	}
	if isDir(&st) {
		return objstore.Object{}, false, nil
	}
	return objectOf(dirKey+name, &st), true, nil
}
