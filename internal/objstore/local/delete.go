package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Delete removes the key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	return s.deleteOne(ctx, "delete", key, nil)
}

// DeleteIfMatch removes the key only if its ETag is etag, holding the parent
// directory's lock from the compare to the unlink.
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	return s.deleteOne(ctx, "delete if match", key, func() error { return s.match("delete if match", key, etag) })
}

func (s *Store) deleteOne(ctx context.Context, action, key string, check func() error) error {
	survivor, failed := s.removeInDir(ctx, action, filepath.Dir(s.path(key)), []string{key}, check)
	if len(failed) > 0 {
		return failed[0].Err
	}
	if survivor == "" {
		return nil
	}
	if err := syncDir(survivor); err != nil && !isNotFound(err) {
		return fmt.Errorf("%s %s: sync directory: %w", action, key, err)
	}
	return nil
}

// DeleteBatch checks the whole batch, then deletes directory by directory:
// one lock, one prune and one fsync per directory rather than per key.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := objstore.CheckBatch(keys); err != nil {
		return err
	}
	byDir := make(map[string][]string)
	for _, k := range keys {
		if err := checkKey(ctx, k); err != nil {
			return err
		}
		dir := filepath.Dir(s.path(k))
		byDir[dir] = append(byDir[dir], k)
	}
	var failed []objstore.KeyError
	survivors := make(map[string]string) // directory to fsync -> a key deleted in it
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		if err := ctx.Err(); err != nil {
			for _, k := range byDir[dir] {
				failed = append(failed, objstore.KeyError{Key: k, Err: err})
			}
			continue
		}
		survivor, errs := s.removeInDir(ctx, "delete", dir, byDir[dir], nil)
		failed = append(failed, errs...)
		if survivor != "" {
			survivors[survivor] = byDir[dir][0]
		}
	}
	for dir, k := range survivors {
		if err := syncDir(dir); err != nil && !isNotFound(err) {
			failed = append(failed, objstore.KeyError{Key: k, Err: fmt.Errorf("delete %s: sync directory: %w", k, err)})
		}
	}
	if len(failed) > 0 {
		return &objstore.BatchError{Failed: failed}
	}
	return nil
}

// removeInDir unlinks keys, which all live in dir, under dir's lock; check
// (used with a single key) runs under the lock first. It then prunes emptied
// directories and returns the deepest one that survived, which needs an
// fsync, or "" if nothing was removed.
func (s *Store) removeInDir(ctx context.Context, action, dir string, keys []string, check func() error) (string, []objstore.KeyError) {
	fail := func(err error) []objstore.KeyError {
		failed := make([]objstore.KeyError, len(keys))
		for i, k := range keys {
			failed[i] = objstore.KeyError{Key: k, Err: err}
		}
		return failed
	}
	l, err := lockDir(ctx, dir)
	if isNotFound(err) && check == nil {
		return "", nil // no directory, so no keys
	}
	if err != nil {
		return "", fail(mapErr(action, keys[0], err))
	}
	if check != nil {
		if err := check(); err != nil {
			l.unlock()
			return "", fail(err)
		}
	}
	var failed []objstore.KeyError
	removed := false
	for _, k := range keys {
		// unlink(2), not os.Remove: that would also rmdir a key naming an
		// empty directory.
		err := syscall.Unlink(s.path(k))
		switch {
		case err == nil:
			removed = true
		case isNotFound(err), errors.Is(err, syscall.EISDIR):
			// missing, or a prefix rather than an object
		default:
			failed = append(failed, objstore.KeyError{Key: k, Err: mapErr(action, k, &fs.PathError{Op: "unlink", Path: s.path(k), Err: err})})
		}
	}
	l.unlock()
	if !removed {
		return "", failed
	}
	return s.prune(dir), failed
}

// prune removes dir and its parents while they are empty, stopping below the
// root: LanceDB lists any *.lance directory, even an empty one, as a table.
// A concurrent writer's new entry makes rmdir fail, which ends the pruning;
// writers retry if their directory vanished. It returns the first directory
// it did not remove.
func (s *Store) prune(dir string) string {
	for len(dir) > len(s.root) {
		if err := syscall.Rmdir(dir); err != nil {
			if isNotFound(err) {
				return filepath.Dir(dir)
			}
			return dir
		}
		dir = filepath.Dir(dir)
	}
	return s.root
}
