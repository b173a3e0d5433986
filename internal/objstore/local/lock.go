package local

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// dirLock is an exclusive flock on a directory. Every mutation of an
// existing file (Put's rename, PutIfMatch, the deletes) holds the lock of the
// file's parent directory, so a compare-and-swap sees no other writer between
// its compare and its swap, in this process or any other.
type dirLock struct {
	f *os.File
}

// lockDir locks dir, retrying if the directory was removed (pruned) and
// perhaps recreated while we waited: a lock on an unlinked directory
// protects nothing. A missing dir is returned as the os error.
func lockDir(ctx context.Context, dir string) (*dirLock, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			return nil, err // ENOTDIR if a parent "directory" is an object
		}
		if err := flock(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock directory %s: %w", dir, err)
		}
		same, err := stillAt(f, dir)
		if same {
			return &dirLock{f: f}, nil
		}
		f.Close() // also releases the flock
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("lock directory %s: %w", dir, err)
		}
	}
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// stillAt reports whether the open directory f is still the one at path.
func stillAt(f *os.File, path string) (bool, error) {
	var open, cur syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &open); err != nil {
		return false, err
	}
	if err := syscall.Stat(path, &cur); err != nil {
		return false, err
	}
	return open.Dev == cur.Dev && open.Ino == cur.Ino, nil
}

// unlock releases the lock; closing the descriptor drops the flock.
func (l *dirLock) unlock() {
	_ = l.f.Close()
}

// sync fsyncs the locked directory so renames and unlinks in it are durable.
func (l *dirLock) sync() error {
	return l.f.Sync()
}
