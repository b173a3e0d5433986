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
// characters of rand.Text (isTempName). Listings skip names exactly of that
// form and keys may not use it, so a crash leaves a stray file nobody sees;
// any other name starting with tmpPrefix is an ordinary object.
const tmpPrefix = ".reaper-tmp-"

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
		t.fd, err = unix.Openat(c.fd(), t.name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
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

// object describes the file once published as key: call it after the
// rename or link (and the removal of the temp name), whose ctime the
// kernel stamps, so LastModified is what a later Head reads.
func (t *tempFile) object(key string) (objstore.Object, error) {
	st, err := fstat(t.fd)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("stat %s: %w", key, err)
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
