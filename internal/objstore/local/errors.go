package local

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// mapErr wraps err with the action and key, mapping a missing file (or a
// file where a directory is expected) to objstore.ErrNotFound.
func mapErr(action, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	}
	return wrapErr(action, key, err)
}

// wrapErr wraps err with the action and key, explaining a permission error;
// unlike mapErr it maps nothing to ErrNotFound (a vanished root is an
// error, not an empty store).
func wrapErr(action, key string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%s %s: permission denied; the reaper user needs read and write access to the store directory: %w", action, key, err)
	}
	return fmt.Errorf("%s %s: %w", action, key, err)
}

// isNotFound reports whether err means the path is missing or crosses
// something that is not a directory (a file, or a symbolic link that
// O_NOFOLLOW refused: ENOTDIR with O_DIRECTORY, ELOOP without).
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

// notRegularError is Get's refusal of a key that exists but is a symbolic
// link, a fifo, a socket or a device. It is not objstore.ErrNotFound: the
// key exists, and a caller that took it for missing would fail open.
func notRegularError(action, key string) error {
	return fmt.Errorf("%s %s: %s is a symbolic link (or not a regular file); reaper never reads through it", action, key, key)
}

// notDirError is a write's refusal of a key whose parent path crosses a
// file or a symbolic link.
func notDirError(action, key, at string) error {
	return fmt.Errorf("%s %s: %s is an object or a symbolic link, not a directory; reaper never writes through it", action, key, at)
}

// ignoringEINTR retries a syscall interrupted by a signal: some filesystems
// (NFS, FUSE) return EINTR even under SA_RESTART.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
