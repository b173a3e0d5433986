package local

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// direntChunk is how many directory entries one refill of a streamed
// directory reads.
const direntChunk = 1024

// sortLimit is the largest directory Walk reads whole and sorts. A larger
// one (a table's data/ can hold a million files) is streamed in directory
// order, a chunk at a time, so memory stays flat: a purge needs every key,
// not their order.
const sortLimit = 10000

// level is one directory on Walk's depth-first stack: its open descriptor
// (children are opened and stat'ed relative to it), its sorted names, or
// for a huge directory the current chunk and the reader for the rest.
type level struct {
	dirKey string
	fd     int // -1 for a directory that does not exist
	names  []string
	next   int
	stream *dirReader // non-nil while a huge directory is being streamed
	prefix string     // name filter of the walk's first directory
}

// Walk visits the tree depth-first. Directories of up to sortLimit entries
// are visited in key order; larger ones in directory order, read in chunks
// (see sortLimit). It holds at most sortLimit names per directory on the
// current path and hands out pages of at most the page size. It descends
// into directories only, each opened with O_NOFOLLOW relative to its
// parent: a symbolic link is an object, never entered, also if it replaced
// a directory after the directory was read. It never leaves the root's
// mount: a directory or file something is mounted on (a volume, a bind
// mount) fails the walk, naming it (objstore.ErrMountPoint), since what
// a walk hands out is what a purge deletes. It hides nothing but reaper's
// own temp files (isOwnTemp): a walk of a table sees every entry.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	dirKey, namePrefix, err := checkPrefix(ctx, prefix)
	if err != nil {
		return err
	}
	first, err := s.openWalk(ctx, dirKey, namePrefix)
	if err != nil {
		return err
	}
	stack := []level{first}
	defer func() {
		for i := range stack {
			stack[i].close()
		}
	}()
	var page []objstore.Object
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := &stack[len(stack)-1]
		if top.next == len(top.names) && top.stream != nil {
			if err := top.refill(ctx); err != nil {
				return err
			}
		}
		if top.next == len(top.names) {
			top.close()
			stack = stack[:len(stack)-1]
			continue
		}
		next, obj, ok, err := s.visit(ctx, top, top.names[top.next])
		top.next++
		switch {
		case err != nil:
			return err
		case next.fd >= 0:
			stack = append(stack, next)
			continue
		case !ok:
			continue
		}
		page = append(page, obj)
		if len(page) >= s.pageSize {
			if err := fn(page); err != nil {
				return err
			}
			page = nil
		}
	}
	if len(page) > 0 {
		return fn(page)
	}
	return nil
}

// openWalk opens the walk's first directory; one that crosses a link, a
// file or nothing is an empty level.
func (s *Store) openWalk(ctx context.Context, dirKey, namePrefix string) (level, error) {
	c, err := s.openChain(dirKey, rootMountOnly)
	if isNoDir(err) {
		return level{dirKey: dirKey, fd: -1}, nil
	}
	if err != nil {
		return level{fd: -1}, wrapErr("walk", dirKey, err)
	}
	fd := c.fd()
	c.fds = c.fds[:len(c.fds)-1] // keep the directory open, close its ancestors
	c.close()
	return readLevel(ctx, fd, dirKey, namePrefix)
}

// visit handles one name of top: a subdirectory to enter (the returned
// level's fd is open) or an object (ok).
func (s *Store) visit(ctx context.Context, top *level, name string) (level, objstore.Object, bool, error) {
	if sub, isDir := strings.CutSuffix(name, "/"); isDir {
		return s.descend(ctx, top, sub)
	}
	obj, ok, err := s.walkStat(top.fd, top.dirKey, name)
	return level{fd: -1}, obj, ok, err
}

// walkStat is statAt for a walk, which also refuses an entry something is
// mounted on (a file bind-mounted over it): statx describes the mounted
// file, with its mount.
func (s *Store) walkStat(dirfd int, dirKey, name string) (objstore.Object, bool, error) {
	stx, err := lstatxAt(dirfd, name)
	if isNotFound(err) {
		return objstore.Object{}, false, nil
	}
	if err != nil {
		return objstore.Object{}, false, mapErr("stat", dirKey+name, err)
	}
	if err := s.onRootMount(&stx, dirKey+name); err != nil {
		return objstore.Object{}, false, err
	}
	st := statOf(&stx)
	if isDir(&st) {
		return objstore.Object{}, false, nil
	}
	return objectOf(dirKey+name, &st), true, nil
}

// descend opens the subdirectory sub of top without following a link. If
// it is no longer a directory (replaced since top was read, perhaps by a
// link), it is described as the object it now is (ok) and not entered,
// where the directory sorted: only in that race is the page out of key
// order. If it vanished, ok is false. The level's fd is -1 unless entered.
func (s *Store) descend(ctx context.Context, top *level, sub string) (level, objstore.Object, bool, error) {
	key := top.dirKey + sub + "/"
	fd, err := openDirAt(top.fd, sub)
	if err == nil {
		if err := s.checkMount(fd, key); err != nil {
			_ = unix.Close(fd)
			return level{fd: -1}, objstore.Object{}, false, err
		}
		l, err := readLevel(ctx, fd, key, "")
		return l, objstore.Object{}, false, err
	}
	if !isNotFound(err) {
		return level{fd: -1}, objstore.Object{}, false, mapErr("walk", key, err)
	}
	st, err := lstatAt(top.fd, sub)
	switch {
	case isNotFound(err):
		return level{fd: -1}, objstore.Object{}, false, nil
	case err != nil:
		return level{fd: -1}, objstore.Object{}, false, mapErr("walk", key, err)
	case isDir(&st):
		return level{fd: -1}, objstore.Object{}, false, fmt.Errorf("walk %s: the directory changed while it was walked", key)
	}
	return level{fd: -1}, objectOf(top.dirKey+sub, &st), true, nil
}

// readLevel reads up to sortLimit+1 entries of the directory fd, which it
// takes over: all of them sorted when that is the whole directory,
// otherwise the first chunk unsorted with the reader kept for refill.
func readLevel(ctx context.Context, fd int, dirKey, namePrefix string) (level, error) {
	l := level{dirKey: dirKey, fd: fd, prefix: namePrefix}
	r := newDirReader(fd)
	names, eof, err := r.readChunk(ctx, namePrefix, sortLimit+1)
	if err != nil {
		l.close()
		return level{fd: -1}, wrapErr("walk", dirKey, err)
	}
	l.names = names
	if eof {
		slices.Sort(l.names)
	} else {
		l.stream = r
	}
	return l, nil
}

// refill reads the next chunk of a streamed directory.
func (l *level) refill(ctx context.Context) error {
	names, eof, err := l.stream.readChunk(ctx, l.prefix, direntChunk)
	if err != nil {
		return wrapErr("walk", l.dirKey, err)
	}
	if eof {
		l.stream = nil
	}
	l.names, l.next = names, 0
	return nil
}

// close closes the level's directory.
func (l *level) close() {
	if l.fd >= 0 {
		_ = unix.Close(l.fd)
		l.fd = -1
	}
	l.stream = nil
}
