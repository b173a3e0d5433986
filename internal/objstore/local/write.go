package local

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Writes create missing parents through no-follow descriptors (makeChain),
// write a temp file beside the key (writeTemp) and publish it with a
// rename or a link relative to the same directory descriptor, asking the
// fence immediately before. A parent that is a file or a symbolic link
// fails the write: reaper never writes through a link. A key that is
// itself a link is replaced, never written through.

// Put writes body to a temp file and renames it over the key under the
// directory's lock, so readers see the old or the new bytes, never a mix.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkWriteKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	c, t, err := s.stage(ctx, "put", key, body)
	if err != nil {
		return objstore.Object{}, err
	}
	defer c.close()
	defer t.close()
	// The temp file keeps the directory non-empty, so it cannot be pruned
	// before the rename.
	same, err := lockChain(c)
	if err == nil && !same {
		err = fmt.Errorf("directory %s was replaced during the write", c.dirKey)
	}
	if err == nil {
		err = fence(ctx)
	}
	if err == nil {
		_, name := splitKey(key)
		err = ignoringEINTR(func() error { return unix.Renameat(c.fd(), t.name, c.fd(), name) })
	}
	c.unlock()
	if err != nil {
		t.remove(c)
		return objstore.Object{}, mapErr("put", key, err)
	}
	obj, err := t.object(key)
	if err != nil {
		return objstore.Object{}, err
	}
	// Sync after unlocking: concurrent writers in one directory then share
	// fsyncs instead of queueing for them.
	if err := c.sync(); err != nil {
		return objstore.Object{}, fmt.Errorf("put %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// PutIfAbsent hard-links a complete temp file to the key: linkat(2) fails
// with EEXIST if the key exists (as any entry, a link included), atomically
// across processes. The fence and the link happen under the directory's
// flock, shared: creates need no order among themselves, but a
// compare-and-swap (a lease takeover beside a purge commit) must not land
// between them, or a process stopped right after its fence said yes would
// publish its commit after another process had taken its lease over and
// finished the table.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkWriteKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	c, t, err := s.stage(ctx, "put if absent", key, body)
	if err != nil {
		return objstore.Object{}, err
	}
	defer c.close()
	// The temp file keeps the directory non-empty, so it cannot be pruned
	// before the link.
	same, err := lockChainAs(c, unix.LOCK_SH)
	if err == nil && !same {
		err = fmt.Errorf("directory %s was replaced during the write", c.dirKey)
	}
	if err == nil {
		err = fence(ctx)
	}
	if err == nil {
		_, name := splitKey(key)
		err = ignoringEINTR(func() error { return unix.Linkat(c.fd(), t.name, c.fd(), name, 0) })
	}
	c.unlock()
	// Unlink the temp name before the stat: it changes the ctime.
	_ = unix.Unlinkat(c.fd(), t.name, 0)
	defer t.close()
	switch {
	case errors.Is(err, unix.EEXIST):
		return objstore.Object{}, fmt.Errorf("put if absent %s: %w", key, objstore.ErrPrecondition)
	case err != nil:
		return objstore.Object{}, mapErr("put if absent", key, err)
	}
	obj, err := t.object(key)
	if err != nil {
		return objstore.Object{}, err
	}
	if err := c.sync(); err != nil {
		return objstore.Object{}, fmt.Errorf("put if absent %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// PutIfMatch replaces the key only if its ETag is etag, holding the parent
// directory's lock from the compare to the rename. The temp file is written
// before the lock (it keeps the directory from being pruned), so the fence
// is asked right after the lock, immediately before the compare and the
// rename. A missing parent (or one that is a file or a link) means a
// missing key: ErrNotFound.
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if err := checkWriteKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	c, err := s.openChain(dirOf(key), crossMounts)
	if err != nil {
		return objstore.Object{}, chainErr("put if match", key, err)
	}
	defer c.close() // also drops the lock
	t, vanished, err := s.writeTemp(ctx, c, key, body)
	if err == nil && vanished { // pruned: the key went with it
		err = fmt.Errorf("put if match %s: %w", key, objstore.ErrNotFound)
	}
	if err != nil {
		return objstore.Object{}, err
	}
	defer t.close()
	if err := swap(ctx, c, t, key, etag); err != nil {
		t.remove(c)
		return objstore.Object{}, err
	}
	obj, err := t.object(key)
	if err != nil {
		return objstore.Object{}, err
	}
	if err := c.sync(); err != nil {
		return objstore.Object{}, fmt.Errorf("put if match %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// swap is PutIfMatch's compare and swap: under c's lock, the fence, the
// ETag compare and the rename of the temp file over the key.
func swap(ctx context.Context, c *dirChain, t *tempFile, key, etag string) error {
	const action = "put if match"
	same, err := lockChain(c)
	if err != nil {
		return wrapErr(action, key, err)
	}
	if !same {
		return fmt.Errorf("%s %s: directory %s was replaced during the write", action, key, c.dirKey)
	}
	if err := fence(ctx); err != nil {
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	if err := match(action, key, c, etag); err != nil {
		return err
	}
	_, name := splitKey(key)
	if err := ignoringEINTR(func() error { return unix.Renameat(c.fd(), t.name, c.fd(), name) }); err != nil {
		return mapErr(action, key, err)
	}
	return nil
}

// stage resolves (creating) the key's directory and writes the temp file
// in it, starting over if a concurrent delete prunes the directory first.
func (s *Store) stage(ctx context.Context, action, key string, body []byte) (*dirChain, *tempFile, error) {
	dirKey, _ := splitKey(key)
	for range maxDirRetries {
		c, err := s.makeChain(ctx, action, key, dirKey)
		if err != nil {
			return nil, nil, err
		}
		t, vanished, err := s.writeTemp(ctx, c, key, body)
		if err == nil && !vanished {
			return c, t, nil
		}
		c.close()
		if err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("create temp file for %s: parent directory kept vanishing", key)
}

// match compares the key's current ETag (by lstat: a link's own) with
// etag; callers hold the lock of c, the key's directory.
func match(action, key string, c *dirChain, etag string) error {
	_, name := splitKey(key)
	st, err := lstatAt(c.fd(), name)
	if err != nil {
		return mapErr(action, key, err)
	}
	if isDir(&st) {
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	}
	if cur := objectOf(key, &st).ETag; cur != etag {
		return fmt.Errorf("%s %s: current etag %q, not %q: %w", action, key, cur, etag, objstore.ErrPrecondition)
	}
	return nil
}
