// Package local implements objstore.Store over a directory tree: keys are
// paths below the root, "dir/" prefixes are subdirectories. Linux only.
//
// Safety: reaper never deletes anything outside a table, never follows a
// symbolic link, never acts on another root directory than the one it
// opened, and never leaves the root's file system.
//
// The root. The root given to Open may itself be a link (the user chose
// it), and it is the one path the kernel resolves whole, again by every
// call. Open records the directory it names (device, inode, mount id,
// birth time); every call checks it on the descriptor it then acts
// through, so a root path repointed meanwhile (a release symlink flipped,
// a restored copy swapped in with mv), which may name a live table of the
// very name being purged, fails the call with objstore.ErrRootChanged
// before anything is read or changed through it (root.go). A new Store
// adopts what the path names then: a pass opens its stores afresh.
//
// Below the root. Every path is resolved from a descriptor of the root,
// one component at a time, each directory opened with
// openat(O_DIRECTORY|O_NOFOLLOW) relative to its parent (resolve.go), and
// every syscall names its target relative to a directory descriptor, so
// no link swapped in anywhere below the root can redirect it. A component
// that is a link, a file or missing means "no such directory": reads and
// listings see no objects there, deletes delete nothing, writes fail naming
// the key (PutIfMatch: ErrNotFound, as for any missing key).
//
// One file system. A walk, a delete and a prune stay on the root's mount
// (mount.go): a directory or file something is mounted on inside the root
// (a volume, a bind mount, also of the same device) fails them with
// objstore.ErrMountPoint, naming it, so a purge refuses the table before
// its commit. Reads and writes may cross a mount: they delete nothing.
//
// Objects: every directory entry that is not a directory and not a temp file
// of reaper's is an object (a regular file, a symbolic link, a fifo, a
// socket or a device), described by lstat: a link is listed, walked and
// deleted as the link itself, never entered, and Get refuses to read it.
// LastModified is the later of mtime and ctime, so a file copied in with its
// old mtime kept (cp -p, rsync -a, mv) still shows when it arrived. Every
// key a walk hands out is one every read and delete accepts.
//
// Writes go through a temp file, fsync and rename (or link, for
// PutIfAbsent); unconditional and conditional writes and the deletes hold
// an flock on the parent directory so a compare-and-swap stays exclusive
// across processes. Every syscall that changes the tree (mkdir, rename,
// link, unlink, rmdir) asks the context's fence (objstore.CheckFence)
// immediately before it; reaper's own temp files are created, and removed
// after a failed write, without asking.
//
// Temp files. A temp file is reaper's only if its name (".reaper-tmp-"
// and 26 letters and digits), its type (a regular file) and its mark (the
// sticky bit, set when it is created and taken off the object it becomes)
// all say so (temp.go). Only such entries are hidden from listings and
// walks, and only they are ever removed: a store's first write into a
// directory removes those an hour old there (stale.go). The name alone
// would not do: a user's file may have it (inside a table it must be
// walked, fenced and deleted with the table, or the purge could never
// finish), and the store cannot tell a table's directory from its own,
// since it knows nothing of tables. reaper writes only at the root, in
// _reaper/ and in its ledger's directories, never inside a table, so a
// marked temp file inside a table can only be a copy of one. Writes refuse
// keys named like temp files; reads and deletes accept them.
//
// The store's clock is the kernel's: it stamps ctime, so Now is time.Now.
package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Store is a filesystem-backed objstore.Store rooted at one directory.
type Store struct {
	root string
	// id is the root directory Open checked: every call acts on it or
	// fails (root.go).
	id       identity
	pageSize int
	// cleaned holds the directory keys this Store has written into and so
	// cleaned of stale temp files (see cleanStaleTemps).
	cleaned sync.Map
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
// an empty, harmless-looking store. dir may be a symbolic link to the
// directory; no link below it is ever followed. The store acts on the
// directory dir names now for its whole life: once dir names another one,
// every call fails with objstore.ErrRootChanged (root.go).
func Open(dir string, opts ...Option) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("open local store %q: path is not absolute; pass an absolute directory such as /data/lance", dir)
	}
	dir = filepath.Clean(dir)
	fd, id, err := openRootDir(dir)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("open local store %s: %w", dir, &objstore.MisconfiguredError{
			Problem: "directory does not exist", Fix: fmt.Sprintf("create it (mkdir -p %s) or fix the root URI", dir), Err: err})
	case errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("open local store %s: not a directory; point the root URI at the directory holding the tables", dir)
	case err != nil:
		return nil, wrapErr("open local store", dir, err)
	}
	_ = unix.Close(fd)
	s := &Store{root: dir, id: id, pageSize: objstore.DefaultPageSize}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// URI is the file URI of the root directory, escaped like
// objstore.Location.String so it parses back to the same directory.
func (s *Store) URI() string {
	return objstore.Location{Scheme: Scheme, Path: s.root}.String()
}

// checkKey validates an object key. On top of the shared grammar it rejects
// a trailing "/" (that names a directory, not a file). Any name the walk
// can hand out is a key every read and delete accepts, temp-like names
// included: a key the walk sees but a delete refuses would leave a
// committed purge unfinishable.
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
	return nil
}

// checkWriteKey is checkKey for a write, which also refuses a name of the
// temp files' form in any segment: a write must never replace a temp file
// in flight, nor make a directory named like one.
func checkWriteKey(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	for _, seg := range strings.Split(key, "/") {
		if isTempName(seg) {
			return fmt.Errorf("%w: %q is named like reaper's temp files (%s followed by 26 letters and digits); reaper does not write such a key", objstore.ErrInvalidKey, key, tmpPrefix)
		}
	}
	return nil
}

// splitKey splits a validated key into its directory key ("" or ending in
// "/") and its last segment.
func splitKey(key string) (dirKey, name string) {
	i := strings.LastIndexByte(key, '/')
	return key[:i+1], key[i+1:]
}
