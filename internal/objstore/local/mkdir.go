package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// errVanished: a directory of the chain was removed (pruned) while the
// chain was being built; the caller starts over from the root.
var errVanished = errors.New("directory vanished")

// makeChain opens the directory dirKey for a write of key, creating the
// missing directories. Each is created with mkdirat inside its no-follow
// parent, after asking the fence, and the parent is fsynced so the new
// directory survives a crash. A component that is a file or a symbolic
// link fails, naming it: reaper never writes through a link.
func (s *Store) makeChain(ctx context.Context, action, key, dirKey string) (*dirChain, error) {
	for range maxDirRetries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := s.tryMakeChain(ctx, action, key, dirKey)
		if !errors.Is(err, errVanished) {
			return c, err
		}
	}
	return nil, fmt.Errorf("%s %s: create directory %s: it kept vanishing", action, key, dirKey)
}

func (s *Store) tryMakeChain(ctx context.Context, action, key, dirKey string) (*dirChain, error) {
	root, err := s.openRoot()
	if err != nil {
		return nil, wrapErr(action, key, err)
	}
	c := &dirChain{dirKey: dirKey, segs: segments(dirKey), fds: []int{root}}
	for i, seg := range c.segs {
		at := strings.Join(c.segs[:i+1], "/") + "/"
		fd, err := openDirAt(c.fd(), seg)
		if errors.Is(err, unix.ENOENT) {
			if err = mkdirAt(ctx, c.fd(), seg); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = openDirAt(c.fd(), seg)
			}
		}
		switch {
		case err == nil:
			c.fds = append(c.fds, fd)
			continue
		case errors.Is(err, unix.ENOENT):
			err = errVanished
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			err = notDirError(action, key, at)
		default:
			err = wrapErr(action, key, fmt.Errorf("create directory %s: %w", at, err))
		}
		c.close()
		return nil, err
	}
	return c, nil
}

// mkdirAt creates the directory name inside dirfd, fenced, and fsyncs
// dirfd, which gained an entry.
func mkdirAt(ctx context.Context, dirfd int, name string) error {
	if err := fence(ctx); err != nil {
		return err
	}
	if err := ignoringEINTR(func() error { return unix.Mkdirat(dirfd, name, 0o755) }); err != nil {
		return err
	}
	return ignoringEINTR(func() error { return unix.Fsync(dirfd) })
}
