package local

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns path resolution: no path below the root is ever handed to
// the kernel whole. Each directory is opened relative to its parent's
// descriptor with O_NOFOLLOW, so a symbolic link anywhere below the root is
// refused where it stands instead of being followed.

// dirFlags opens a directory component: never a link, never a non-directory.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// dirChain is an open directory and its ancestors up to the root: fds[0] is
// the root and fds[i] the directory segs[i-1] inside fds[i-1], each opened
// with dirFlags. Holding the ancestors lets the lock check that its
// directory is still at its name and pruning remove emptied directories
// upward, with no path lookup.
type dirChain struct {
	dirKey string // "" for the root, else ending in "/"
	segs   []string
	fds    []int
}

// fd is the descriptor of the chain's directory.
func (c *dirChain) fd() int { return c.fds[len(c.fds)-1] }

// close closes every descriptor; it drops the flock if one is held.
func (c *dirChain) close() {
	for _, fd := range c.fds {
		_ = unix.Close(fd)
	}
	c.fds = nil
}

// noDirError says a component of a directory key is missing, a file or a
// symbolic link: as far as the store is concerned no such directory exists.
type noDirError struct {
	at  string // the component's key, ending in "/"
	err error
}

func (e *noDirError) Error() string { return fmt.Sprintf("open directory %s: %v", e.at, e.err) }
func (e *noDirError) Unwrap() error { return e.err }

// isNoDir reports whether err is a noDirError.
func isNoDir(err error) bool {
	var nd *noDirError
	return errors.As(err, &nd)
}

// mounts says whether a chain may cross into another mount (mount.go).
type mounts bool

const (
	// crossMounts: a read, or a write; they delete nothing.
	crossMounts mounts = false
	// rootMountOnly: a walk, delete or prune, which stay on the root's
	// file system.
	rootMountOnly mounts = true
)

// openChain opens the directory dirKey ("" or ending in "/") component by
// component without following any link. A component that is missing, a
// file or a link fails with a noDirError; with rootMountOnly, one on
// another mount than the root's fails wrapping objstore.ErrMountPoint.
func (s *Store) openChain(dirKey string, m mounts) (*dirChain, error) {
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	c := &dirChain{dirKey: dirKey, segs: segments(dirKey), fds: []int{root}}
	for i, seg := range c.segs {
		at := strings.Join(c.segs[:i+1], "/") + "/"
		fd, err := openDirAt(c.fd(), seg)
		if err != nil {
			c.close()
			if isNotFound(err) {
				return nil, &noDirError{at: at, err: err}
			}
			return nil, fmt.Errorf("open directory %s: %w", at, err)
		}
		c.fds = append(c.fds, fd)
		if m == rootMountOnly {
			if err := s.checkMount(fd, at); err != nil {
				c.close()
				return nil, err
			}
		}
	}
	return c, nil
}

// openDirAt opens the directory name inside dirfd, refusing a link
// (ENOTDIR) and anything but a directory.
func openDirAt(dirfd int, name string) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, dirFlags, 0)
		return err
	})
	return fd, err
}

// segments splits a directory key into its names.
func segments(dirKey string) []string {
	if dirKey == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(dirKey, "/"), "/")
}

// chainErr maps an error of openChain or lockDir for a key: a directory
// that does not exist means the key does not exist (objstore.ErrNotFound);
// anything else (the root vanished, permissions) stays an error.
func chainErr(action, key string, err error) error {
	if isNoDir(err) {
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	}
	return wrapErr(action, key, err)
}
