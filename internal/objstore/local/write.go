package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// maxDirRetries bounds how often a write recreates a parent directory that a
// concurrent delete pruned under it.
const maxDirRetries = 100

// Put writes body to a temp file and renames it over the key, so readers see
// the old or the new bytes, never a mix.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	target := s.path(key)
	tmp, obj, err := s.writeTemp(ctx, key, body)
	if err != nil {
		return objstore.Object{}, err
	}
	// The temp file keeps its directory non-empty, so it cannot be pruned
	// before the rename.
	l, err := lockDir(ctx, filepath.Dir(target))
	if err != nil {
		os.Remove(tmp)
		return objstore.Object{}, mapErr("put", key, err)
	}
	err = os.Rename(tmp, target)
	l.unlock()
	if err != nil {
		os.Remove(tmp)
		return objstore.Object{}, mapErr("put", key, err)
	}
	// Sync after unlocking: concurrent writers in one directory then share
	// fsyncs instead of queueing for them.
	if err := syncDir(filepath.Dir(target)); err != nil && !isNotFound(err) {
		return objstore.Object{}, fmt.Errorf("put %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// PutIfAbsent hard-links a complete temp file to the key: link(2) fails with
// EEXIST if the key exists, atomically across processes.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	target := s.path(key)
	tmp, obj, err := s.writeTemp(ctx, key, body)
	if err != nil {
		return objstore.Object{}, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return objstore.Object{}, fmt.Errorf("put if absent %s: %w", key, objstore.ErrPrecondition)
		}
		return objstore.Object{}, mapErr("put if absent", key, err)
	}
	if err := syncDir(filepath.Dir(target)); err != nil {
		return objstore.Object{}, fmt.Errorf("put if absent %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// PutIfMatch replaces the key only if its ETag is etag, holding the parent
// directory's lock from the compare to the rename.
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	target := s.path(key)
	l, err := lockDir(ctx, filepath.Dir(target))
	if err != nil {
		return objstore.Object{}, mapErr("put if match", key, err)
	}
	defer l.unlock()
	if err := s.match("put if match", key, etag); err != nil {
		return objstore.Object{}, err
	}
	// The directory holds the key, so it exists and is not pruned.
	tmp, obj, err := s.writeTemp(ctx, key, body)
	if err != nil {
		return objstore.Object{}, err
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return objstore.Object{}, mapErr("put if match", key, err)
	}
	if err := l.sync(); err != nil {
		return objstore.Object{}, fmt.Errorf("put if match %s: sync directory: %w", key, err)
	}
	return obj, nil
}

// match compares the key's current ETag with etag; callers hold the lock.
func (s *Store) match(action, key, etag string) error {
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return mapErr(action, key, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	}
	if cur := objectOf(key, fi).ETag; cur != etag {
		return fmt.Errorf("%s %s: current etag %q, not %q: %w", action, key, cur, etag, objstore.ErrPrecondition)
	}
	return nil
}

// writeTemp writes body, durably, to a new temp file beside the key and
// returns its path and the Object the key will have once the temp file is
// renamed or linked there (both keep inode, mtime and size).
func (s *Store) writeTemp(ctx context.Context, key string, body []byte) (string, objstore.Object, error) {
	dir := filepath.Dir(s.path(key))
	for range maxDirRetries {
		err := s.mkdirAll(ctx, dir)
		var f *os.File
		tmp := filepath.Join(dir, tmpPrefix+rand.Text())
		if err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // a concurrent delete pruned dir after mkdirAll
		case errors.Is(err, syscall.ENOTDIR):
			return "", objstore.Object{}, fmt.Errorf("write %s: a parent of the key is an object, not a directory: %w", key, err)
		case err != nil:
			return "", objstore.Object{}, mapErr("create temp file for", key, err)
		}
		obj, err := fillTemp(f, key, body)
		if err != nil {
			os.Remove(tmp)
			return "", objstore.Object{}, err
		}
		return tmp, obj, nil
	}
	return "", objstore.Object{}, fmt.Errorf("create temp file for %s: parent directory kept vanishing", key)
}

// fillTemp writes, timestamps, fsyncs and closes f. The mtime is set from the
// wall clock because the kernel's file timestamps are coarse (a jiffy):
// with a reused inode and an equal size, two writes could otherwise share
// an ETag.
func fillTemp(f *os.File, key string, body []byte) (objstore.Object, error) {
	defer f.Close()
	if _, err := f.Write(body); err != nil {
		return objstore.Object{}, fmt.Errorf("write %s: %w", key, err)
	}
	now := time.Now()
	ts := []syscall.Timespec{syscall.NsecToTimespec(now.UnixNano()), syscall.NsecToTimespec(now.UnixNano())}
	if err := syscall.UtimesNano(f.Name(), ts); err != nil {
		return objstore.Object{}, fmt.Errorf("set mtime of %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return objstore.Object{}, fmt.Errorf("sync %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return objstore.Object{}, fmt.Errorf("stat %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return objstore.Object{}, fmt.Errorf("close %s: %w", key, err)
	}
	return objectOf(key, fi), nil
}

// mkdirAll creates dir and its missing parents below the root, fsyncing each
// parent that gained an entry so new directories survive a crash. It
// tolerates directories appearing or (pruned) vanishing concurrently.
func (s *Store) mkdirAll(ctx context.Context, dir string) error {
	if dir == s.root {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(s.root, dir)
	if err != nil {
		return err
	}
	for range maxDirRetries {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.mkdirPath(strings.Split(rel, string(filepath.Separator)))
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("create directory %s: it kept vanishing", dir)
}

// mkdirPath creates each missing segment in turn; ENOENT means a parent was
// pruned meanwhile and the caller starts over.
func (s *Store) mkdirPath(segs []string) error {
	cur := s.root
	for _, seg := range segs {
		parent := cur
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := syncDir(parent); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory so entries created or removed in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
