package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// tmpPrefix starts the temp files of in-flight writes: tmpPrefix and 26
// characters of rand.Text (isTempName). Writes may not use such a key; any
// other name starting with tmpPrefix is an ordinary object.
const tmpPrefix = ".reaper-tmp-"

// tempMark is the mode bit that signs a temp file as reaper's: the sticky
// bit. Linux gives it no meaning on a regular file, no tool sets it there
// by accident (cp, tar and rsync keep it only when copying such a file),
// every POSIX file system keeps it, and any user may set it on a file of
// their own. writeTemp creates every temp file with it, and a published
// object loses it, so an entry is reaper's temp file only when its name,
// its type and this bit all say so (isOwnTemp): a user's file that merely
// has the name is an object like any other.
const tempMark = unix.S_ISVTX

// StaleTempAge is how old a temp file must be before a write into its
// directory removes it: a write takes milliseconds, so one this old belongs
// to a process killed mid-write, and nothing else would ever remove it.
const StaleTempAge = time.Hour

// tempFile is a complete, fsynced temp file beside a key, kept open so the
// key's metadata can be read once the file is published under it.
type tempFile struct {
	name string
	fd   int
}

// writeTemp writes body durably to a new temp file in c's directory,
// created with O_EXCL|O_NOFOLLOW relative to the directory's descriptor.
// vanished reports that the directory was removed (pruned) under us: the
// caller resolves it again. The mtime is stamped from the wall clock
// because the kernel's file timestamps are coarse (a jiffy): with a reused
// inode and an equal size, two writes could otherwise share an ETag.
func (s *Store) writeTemp(ctx context.Context, c *dirChain, key string, body []byte) (t *tempFile, vanished bool, err error) {
	s.cleanOnce(ctx, c)
	t = &tempFile{name: tmpPrefix + rand.Text()}
	err = ignoringEINTR(func() (err error) {
		t.fd, err = unix.Openat(c.fd(), t.name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644|tempMark)
		return err
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, wrapErr("create temp file for", key, err)
	}
	if err := t.fill(key, body); err != nil {
		t.remove(c)
		return nil, false, err
	}
	return t, false, nil
}

// fill writes body, stamps the mtime and fsyncs.
func (t *tempFile) fill(key string, body []byte) error {
	for b := body; len(b) > 0; {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Write(t.fd, b)
			return err
		})
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		b = b[n:]
	}
	now := unix.NsecToTimespec(time.Now().UnixNano())
	if err := futimens(t.fd, &[2]unix.Timespec{now, now}); err != nil {
		return fmt.Errorf("set mtime of %s: %w", key, err)
	}
	if err := ignoringEINTR(func() error { return unix.Fsync(t.fd) }); err != nil {
		return fmt.Errorf("sync %s: %w", key, err)
	}
	return nil
}

// object describes the file once published as key, and takes its temp
// mark off: call it after the rename or link (and the removal of the temp
// name), whose ctime the kernel stamps, so LastModified is what a later
// Head reads. The mark goes after the publication, so no unmarked temp
// file ever exists; an object whose unmarking failed or was cut short by a
// crash keeps the bit, which harms nothing (only temp names are hidden).
func (t *tempFile) object(key string) (objstore.Object, error) {
	st, err := fstat(t.fd)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("stat %s: %w", key, err)
	}
	if st.Mode&tempMark != 0 {
		perm := st.Mode & 0o7777 &^ tempMark
		if ignoringEINTR(func() error { return unix.Fchmod(t.fd, perm) }) == nil {
			if st, err = fstat(t.fd); err != nil {
				return objstore.Object{}, fmt.Errorf("stat %s: %w", key, err)
			}
		}
	}
	return objectOf(key, &st), nil
}

// close closes the descriptor; the file stays.
func (t *tempFile) close() {
	if t.fd >= 0 {
		_ = unix.Close(t.fd)
		t.fd = -1
	}
}

// remove closes the file and unlinks the temp name, best effort. It is not
// fenced: the temp file was never an object, and removing it puts the tree
// back as it was before the write.
func (t *tempFile) remove(c *dirChain) {
	t.close()
	_ = unix.Unlinkat(c.fd(), t.name, 0)
}
