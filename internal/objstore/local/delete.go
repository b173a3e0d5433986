package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Deletes resolve the key's directory without following a link, lock it,
// and unlinkat(dirfd, name, 0) each key, asking the fence immediately
// before each unlink and then the context's between-keys check
// (objstore.BetweenKeys: a done context, a caller's guard), so a batch of
// 1,000 unlinks stops between two of them. A key that is a symbolic link
// removes the link, never its target. A key below a link, a file or
// nothing does not exist: nothing is deleted. A key naming a directory is
// a prefix: it counts as missing.

// Delete removes the key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	d := &deletion{ctx: ctx, action: "delete"}
	return firstErr(s.removeInDir(d, dirOf(key), []string{key}, nil))
}

// DeleteIfMatch removes the key only if its ETag is etag, holding the parent
// directory's lock from the compare to the unlink.
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	d := &deletion{ctx: ctx, action: "delete if match"}
	check := func(c *dirChain) error { return match(d.action, key, c, etag) }
	return firstErr(s.removeInDir(d, dirOf(key), []string{key}, check))
}

// DeleteBatch checks the whole batch, then deletes directory by directory:
// one resolve, one lock, one prune and one fsync per directory rather than
// per key (or none, deferred to the context's objstore.SyncBatch). Once the fence refuses, nothing more is unlinked: that key and
// every later one fail with an error wrapping objstore.ErrFenced; likewise
// with the between-keys check's error once it stops the batch.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keys, refused, err := objstore.CheckBatchWith(keys, func(k string) error { return checkKey(ctx, k) })
	if err != nil {
		return err
	}
	byDir := make(map[string][]string)
	for _, k := range keys {
		byDir[dirOf(k)] = append(byDir[dirOf(k)], k)
	}
	d := &deletion{ctx: ctx, action: "delete"}
	// Asked once up front too, as every backend does per request: a batch
	// whose directories are all gone sends no syscall, and must still fail
	// when its lease is lost rather than report keys deleted.
	if err := fence(ctx); err != nil {
		d.stopped = err
		return &objstore.BatchError{Failed: append(refused, d.failAll(keys, err)...)}
	}
	failed := refused
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		failed = append(failed, s.removeInDir(d, dir, byDir[dir], nil)...)
	}
	if len(failed) > 0 {
		return &objstore.BatchError{Failed: failed}
	}
	return nil
}

// deletion is the state of one delete call across its directories.
type deletion struct {
	ctx    context.Context
	action string
	// stopped is the fence's refusal, or the between-keys check's error,
	// once seen: every later key fails with it without another syscall.
	stopped error
}

// mayGoOn asks the fence, then the between-keys check, before the next
// unlink; the first refusal is kept in stopped.
func (d *deletion) mayGoOn() error {
	err := fence(d.ctx)
	if err == nil {
		err = objstore.BetweenKeys(d.ctx)
	}
	if err != nil {
		d.stopped = err
	}
	return err
}

// failAll fails every key with err.
func (d *deletion) failAll(keys []string, err error) []objstore.KeyError {
	failed := make([]objstore.KeyError, len(keys))
	for i, k := range keys {
		failed[i] = objstore.KeyError{Key: k, Err: fmt.Errorf("%s %s: %w", d.action, k, err)}
	}
	return failed
}

// removeInDir unlinks keys, which all live in dirKey, under the directory's
// lock; check (used with a single key) runs under the lock, after the
// fence, before the unlink. Then it prunes the directories the unlinks
// emptied and fsyncs the deepest one left standing.
func (s *Store) removeInDir(d *deletion, dirKey string, keys []string, check func(*dirChain) error) []objstore.KeyError {
	if d.stopped != nil {
		return d.failAll(keys, d.stopped)
	}
	if err := d.ctx.Err(); err != nil {
		return d.failAll(keys, err)
	}
	how := unix.LOCK_SH
	if check != nil {
		how = unix.LOCK_EX
	}
	c, err := s.lockDir(d.ctx, dirKey, how)
	if isNoDir(err) && check == nil {
		return nil // no directory, so no keys
	}
	if err != nil {
		failed := make([]objstore.KeyError, len(keys))
		for i, k := range keys {
			failed[i] = objstore.KeyError{Key: k, Err: chainErr(d.action, k, err)}
		}
		return failed
	}
	defer c.close()
	failed, removed := s.unlinkAll(d, c, keys, check)
	c.unlock()
	if !removed {
		return failed
	}
	survivor := pruneUp(d, c)
	if err := syncDir(d, survivor, keys[0]); err != nil {
		failed = append(failed, objstore.KeyError{Key: keys[0], Err: err})
	}
	return failed
}

// syncDir makes the removals in the directory fd durable: now, or once per
// directory at the caller's flush when the context carries a
// objstore.SyncBatch (a purge flushes once per phase, not once per batch
// of 1,000 keys). key names the work in an error.
func syncDir(d *deletion, fd int, key string) error {
	sync := func(fd int) error {
		if err := ignoringEINTR(func() error { return unix.Fsync(fd) }); err != nil {
			return fmt.Errorf("%s %s: sync directory: %w", d.action, key, err)
		}
		return nil
	}
	b := objstore.SyncBatchFrom(d.ctx)
	if b == nil {
		return sync(fd)
	}
	st, err := fstat(fd)
	if err != nil {
		return sync(fd)
	}
	// The chain's descriptors close when this call returns: the batch
	// keeps its own, one per directory.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return sync(fd)
	}
	if !b.Defer(dirID{st.Dev, st.Ino}, func() error { defer unix.Close(dup); return sync(dup) }) {
		_ = unix.Close(dup)
	}
	return nil
}

// dirID identifies a directory for a SyncBatch.
type dirID struct{ dev, ino uint64 }

// unlinkAll unlinks each key in the locked directory c, asking the fence
// and then objstore.BetweenKeys before each; check, if any, runs between
// those and the unlink (a fenced caller learns it is fenced, not that the
// key is gone, as on every backend). removed reports that at least one
// entry went.
func (s *Store) unlinkAll(d *deletion, c *dirChain, keys []string, check func(*dirChain) error) (failed []objstore.KeyError, removed bool) {
	for i, k := range keys {
		if err := d.mayGoOn(); err != nil {
			return append(failed, d.failAll(keys[i:], err)...), removed
		}
		if check != nil {
			if err := check(c); err != nil {
				failed = append(failed, objstore.KeyError{Key: k, Err: err})
				continue
			}
		}
		_, name := splitKey(k)
		// unlinkat without AT_REMOVEDIR: a key naming a directory fails
		// with EISDIR instead of removing it.
		err := ignoringEINTR(func() error { return unix.Unlinkat(c.fd(), name, 0) })
		switch {
		case err == nil:
			removed = true
		case isNotFound(err), errors.Is(err, unix.EISDIR):
			// missing, or a prefix rather than an object
		case errors.Is(err, unix.EBUSY): // something is mounted on it
			failed = append(failed, objstore.KeyError{Key: k, Err: fmt.Errorf("%s %s: %w", d.action, k, mountPointError(k))})
		default:
			failed = append(failed, objstore.KeyError{Key: k, Err: mapErr(d.action, k, fmt.Errorf("unlink: %w", err))})
		}
	}
	return failed, removed
}

// dirOf is the directory key of a key.
func dirOf(key string) string {
	dirKey, _ := splitKey(key)
	return dirKey
}

// firstErr is the error of a single-key delete.
func firstErr(failed []objstore.KeyError) error {
	if len(failed) > 0 {
		return failed[0].Err
	}
	return nil
}
