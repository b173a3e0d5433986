package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Directories are removed with unlinkat(parentfd, name, AT_REMOVEDIR),
// which removes only an empty directory and never follows a link, each
// asking the fence first. The root is never removed: LanceDB lists any
// *.lance directory, even an empty one, as a table, but the root is the
// user's.

// pruneUp removes c's directory and its parents while they are empty,
// deepest first, stopping below the root. A concurrent writer's new entry
// makes rmdir fail, which ends the pruning; writers retry if their
// directory vanished. A refusing fence ends it too and is recorded in d.
// It returns the descriptor of the deepest directory left standing that
// lost an entry, which needs an fsync.
func pruneUp(d *deletion, c *dirChain) int {
	if d.stopped != nil { // fenced or stopped already: nothing more changes
		return c.fd()
	}
	for i := len(c.segs); i > 0; i-- {
		// The caller's limit (objstore.WithPruneWithin): a retention run
		// removes only the directories below a table's _indices/.
		if !objstore.PruneAllowed(d.ctx, strings.Join(c.segs[:i], "/")+"/") {
			return c.fds[i]
		}
		if err := fence(d.ctx); err != nil {
			d.stopped = err
			return c.fds[i]
		}
		err := ignoringEINTR(func() error { return unix.Unlinkat(c.fds[i-1], c.segs[i-1], unix.AT_REMOVEDIR) })
		switch {
		case errors.Is(err, unix.ENOENT): // removed by someone else
			return c.fds[i-1]
		case err != nil: // not empty (or no longer a directory)
			return c.fds[i]
		}
	}
	return c.fds[0]
}

// PruneEmpty removes the empty directories at and below prefix, which
// must end in "/", deepest first, the prefix directory included, never the
// root. It follows no link: a symbolic link anywhere below the prefix is
// an entry like a file, and a prefix that crosses a link, a file or
// nothing has nothing to prune (nil). If any entry below prefix is not a
// directory, it removes nothing and names that entry. It asks the fence
// once up front (a fenced caller learns it even when there is nothing to
// remove) and before each rmdir.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: prune prefix %q does not end in \"/\"", objstore.ErrInvalidKey, prefix)
	}
	if err := objstore.ValidateKey(prefix); err != nil {
		return err
	}
	if err := fence(ctx); err != nil {
		return fmt.Errorf("prune %s: %w", prefix, err)
	}
	c, err := s.openChain(prefix, rootMountOnly)
	if isNoDir(err) {
		return nil
	}
	if err != nil {
		return wrapErr("prune", prefix, err)
	}
	defer c.close()
	p := pruner{s: s, ctx: ctx, prefix: prefix}
	if err := p.check(c.fd(), prefix); err != nil {
		return err
	}
	if err := p.remove(c.fd(), prefix); err != nil {
		return err
	}
	parent, name := c.fds[len(c.fds)-2], c.segs[len(c.segs)-1]
	if err := p.rmdir(parent, name, prefix); err != nil {
		return err
	}
	if err := ignoringEINTR(func() error { return unix.Fsync(parent) }); err != nil {
		return fmt.Errorf("prune %s: sync directory: %w", prefix, err)
	}
	return nil
}

// pruner walks one PruneEmpty tree through directory descriptors.
type pruner struct {
	s      *Store
	ctx    context.Context
	prefix string
}

// check fails, naming the entry, if the tree of the directory dirfd (key
// dirKey) holds anything but directories.
func (p *pruner) check(dirfd int, dirKey string) error {
	return p.each(dirfd, dirKey, func(int, string, string) error { return nil })
}

// remove removes the directories of the tree of dirfd, deepest first.
func (p *pruner) remove(dirfd int, dirKey string) error {
	return p.each(dirfd, dirKey, p.rmdir)
}

// each visits the tree of dirfd depth-first and calls after(dirfd, name,
// key) for each subdirectory once its own tree is done. An entry that is
// not a directory fails the visit, naming it.
func (p *pruner) each(dirfd int, dirKey string, after func(dirfd int, name, key string) error) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	// From the first entry: check has read this descriptor before remove.
	if _, err := unix.Seek(dirfd, 0, io.SeekStart); err != nil {
		return wrapErr("prune", p.prefix, fmt.Errorf("read %s: %w", dirKey, err))
	}
	r := newDirReader(dirfd)
	for {
		e, ok, err := r.next()
		if errors.Is(err, unix.ENOENT) || (err == nil && !ok) {
			return nil
		}
		if err != nil {
			return wrapErr("prune", p.prefix, fmt.Errorf("read %s: %w", dirKey, err))
		}
		key := dirKey + e.name
		dir, gone, err := r.isDir(e)
		switch {
		case err != nil:
			return wrapErr("prune", p.prefix, fmt.Errorf("stat %s: %w", key, err))
		case gone:
			continue
		case !dir:
			return p.notEmpty(key)
		}
		fd, err := openDirAt(dirfd, e.name)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP): // replaced since it was read
			return p.notEmpty(key)
		case err != nil:
			return wrapErr("prune", p.prefix, fmt.Errorf("open %s/: %w", key, err))
		}
		if err := p.s.checkMount(fd, key+"/"); err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("prune %s: %w", p.prefix, err)
		}
		err = p.each(fd, key+"/", after)
		_ = unix.Close(fd)
		if err == nil {
			err = after(dirfd, e.name, key+"/")
		}
		if err != nil {
			return err
		}
	}
}

// rmdir removes the empty directory name inside dirfd, fenced; one
// already gone is fine.
func (p *pruner) rmdir(dirfd int, name, key string) error {
	if err := fence(p.ctx); err != nil {
		return fmt.Errorf("prune %s: %w", p.prefix, err)
	}
	err := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		return fmt.Errorf("prune %s: %s: %w; something was written into it meanwhile", p.prefix, key, objstore.ErrNotEmpty)
	case errors.Is(err, unix.EBUSY): // mounted on since it was checked
		return fmt.Errorf("prune %s: %w", p.prefix, mountPointError(key))
	}
	return wrapErr("prune", p.prefix, fmt.Errorf("remove %s: %w", key, err))
}

// notEmpty is the refusal of a tree that holds key.
func (p *pruner) notEmpty(key string) error {
	return fmt.Errorf("prune %s: %s is not a directory: %w", p.prefix, key, objstore.ErrNotEmpty)
}
