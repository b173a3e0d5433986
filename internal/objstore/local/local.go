// Package local implements objstore.Store over a directory tree: keys are
// paths below the root, "dir/" prefixes are subdirectories. Writes go
// through a temp file, fsync and rename; conditional writes hold an flock on
// the parent directory so they stay exclusive across processes. Linux only.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// tmpPrefix marks temp files of in-flight writes. Listings skip such names
// and keys may not use them, so a crash leaves a stray file nobody sees.
const tmpPrefix = ".reaper-tmp-"

// StaleTempAge is how old a temp file must be before a listing that meets
// it removes it: a write takes milliseconds, so one this old belongs to a
// process killed mid-write, and nothing else would ever remove it.
const StaleTempAge = time.Hour

// Store is a filesystem-backed objstore.Store rooted at one directory.
type Store struct {
	root     string
	pageSize int
}

var _ objstore.Store = (*Store)(nil)

// Option configures Open.
type Option func(*Store)

// WithPageSize caps objects plus prefixes per listing page (default
// objstore.DefaultPageSize); tests lower it to cross pages cheaply.
func WithPageSize(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.pageSize = n
		}
	}
}

// Open returns a store rooted at dir, which must be an absolute path to an
// existing directory: reaper never creates a root, so a typo cannot start
// an empty, harmless-looking store.
func Open(dir string, opts ...Option) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("open local store %q: path is not absolute; pass an absolute directory such as /data/lance", dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open local store %s: directory does not exist; create it (mkdir -p %s) or fix the root URI", dir, dir)
	case err != nil:
		return nil, fmt.Errorf("open local store %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("open local store %s: not a directory; point the root URI at the directory holding the tables", dir)
	}
	s := &Store{root: dir, pageSize: objstore.DefaultPageSize}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// URI is the file URI of the root directory, escaped like
// objstore.Location.String so it parses back to the same directory.
func (s *Store) URI() string {
	return objstore.Location{Scheme: objstore.SchemeFile, Path: s.root}.String()
}

// path maps a validated key or prefix to its filesystem path.
func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// checkKey validates an object key. On top of the shared grammar it rejects
// a trailing "/" (that names a directory, not a file) and the temp-file
// prefix (such a file would be invisible to listings).
func checkKey(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := objstore.ValidateKey(key); err != nil {
		return err
	}
	if strings.HasSuffix(key, "/") {
		return fmt.Errorf("%w: %q ends in \"/\"", objstore.ErrInvalidKey, key)
	}
	if strings.HasPrefix(key, tmpPrefix) || strings.Contains(key, "/"+tmpPrefix) {
		return fmt.Errorf("%w: %q uses the reserved prefix %q", objstore.ErrInvalidKey, key, tmpPrefix)
	}
	return nil
}

// mapErr wraps err with the action and key, mapping a missing file (or a
// file where a directory is expected) to objstore.ErrNotFound.
func mapErr(action, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: permission denied; the reaper user needs read and write access to the store directory: %w", action, key, err)
	default:
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
}

// isNotFound reports whether err means the path (or one of its parents) is
// missing.
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// objectOf builds an Object from a stat result. The ETag combines inode,
// mtime and size: every write makes a new inode (temp file, then rename or
// link) and stamps a nanosecond mtime, so no two writes share one.
func objectOf(key string, fi fs.FileInfo) objstore.Object {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return objstore.Object{
		Key:          key,
		Size:         fi.Size(),
		ETag:         fmt.Sprintf("%x-%x-%x", ino, fi.ModTime().UnixNano(), fi.Size()),
		LastModified: fi.ModTime(),
	}
}
