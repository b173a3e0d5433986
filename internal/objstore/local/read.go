package local

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Get reads the object through one open descriptor, so the returned ETag
// always belongs to the returned bytes even if a write replaces the key.
// The key is opened with O_NOFOLLOW relative to its no-follow parent: a key
// that is a symbolic link, a fifo, a socket or a device exists but is never
// read, and Get returns an error that is not objstore.ErrNotFound, so a
// caller fails closed. A directory is a prefix: ErrNotFound.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, objstore.Object{}, err
	}
	if err := objstore.CheckLimit(key, limit); err != nil {
		return nil, objstore.Object{}, err
	}
	fd, err := s.openObject(key)
	if err != nil {
		return nil, objstore.Object{}, err
	}
	defer unix.Close(fd)
	st, err := fstat(fd)
	if err != nil {
		return nil, objstore.Object{}, mapErr("get", key, err)
	}
	if !isRegular(&st) { // replaced since openObject's lstat
		return nil, objstore.Object{}, notRegularError("get", key)
	}
	if st.Size > limit {
		return nil, objstore.Object{}, &objstore.TooLargeError{Key: key, Size: st.Size, Limit: limit}
	}
	body := make([]byte, st.Size)
	if err := readFull(fd, body); err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	return body, objectOf(key, &st), nil
}

// openObject opens a regular file for reading. It checks the entry's type
// by lstat before opening it, so Get never opens a device or a fifo (an
// open can rewind a tape); O_NONBLOCK keeps an entry swapped for a fifo in
// between from blocking the open, and O_NOFOLLOW refuses a swapped-in link.
func (s *Store) openObject(key string) (int, error) {
	dirKey, name := splitKey(key)
	c, err := s.openChain(dirKey, crossMounts)
	if err != nil {
		return -1, chainErr("get", key, err)
	}
	defer c.close()
	st, err := lstatAt(c.fd(), name)
	switch {
	case err != nil:
		return -1, mapErr("get", key, err)
	case isDir(&st): // a directory is a prefix, not an object
		return -1, fmt.Errorf("get %s: %w (%w)", key, objstore.ErrNotFound, objstore.ErrIsFolder)
	case !isRegular(&st):
		return -1, notRegularError("get", key)
	}
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(c.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, notRegularError("get", key)
	case err != nil:
		return -1, mapErr("get", key, err)
	}
	return fd, nil
}

// readFull fills buf from fd; a file that shrank is an error.
func readFull(fd int, buf []byte) error {
	for len(buf) > 0 {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Read(fd, buf)
			return err
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		buf = buf[n:]
	}
	return nil
}

// Head describes the object by lstat: any entry but a directory is an
// object, a symbolic link included (its own metadata, never its target's).
// A directory (a prefix) or a missing key is ErrNotFound.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	dirKey, name := splitKey(key)
	c, err := s.openChain(dirKey, crossMounts)
	if err != nil {
		return objstore.Object{}, chainErr("head", key, err)
	}
	defer c.close()
	st, err := lstatAt(c.fd(), name)
	if err != nil {
		return objstore.Object{}, mapErr("head", key, err)
	}
	if isDir(&st) {
		return objstore.Object{}, fmt.Errorf("head %s: %w (%w)", key, objstore.ErrNotFound, objstore.ErrIsFolder)
	}
	return objectOf(key, &st), nil
}
