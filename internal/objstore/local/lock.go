package local

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// Every mutation of an existing key (Put's rename, PutIfMatch, the deletes)
// holds a flock on the key's parent directory, taken on the descriptor the
// no-follow resolution opened, so a compare-and-swap sees no other writer
// between its compare and its swap, in this process or any other. Writes
// and conditional deletes hold it exclusively; unconditional deletes and
// create-if-absent links (which linkat itself makes atomic) share it with
// each other (they compare nothing, and unlinking distinct names
// needs no order), so a purge's concurrent batches in one directory do not
// queue behind each other, while still excluding every compare-and-swap.

// maxDirRetries bounds how often an operation re-resolves a directory that
// a concurrent delete pruned (and perhaps recreated) under it.
const maxDirRetries = 100

// lockDir resolves dirKey and locks it, re-resolving while the directory
// it locked is no longer the one at its name: a lock on a pruned directory
// protects nothing. A directory that does not exist is a noDirError.
func (s *Store) lockDir(ctx context.Context, dirKey string, how int) (*dirChain, error) {
	for range maxDirRetries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := s.openChain(dirKey, rootMountOnly)
		if err != nil {
			return nil, err
		}
		same, err := lockChainAs(c, how)
		if err != nil {
			c.close()
			return nil, err
		}
		if same {
			return c, nil
		}
		c.close() // also drops the flock
	}
	return nil, fmt.Errorf("lock directory %s: it kept being replaced", dirKey)
}

// lockChain flocks the chain's directory exclusively, then reports whether
// it is still the directory at its name in its parent (the root always is).
func lockChain(c *dirChain) (same bool, err error) { return lockChainAs(c, unix.LOCK_EX) }

// lockChainAs is lockChain with the flock mode how (LOCK_EX or LOCK_SH).
func lockChainAs(c *dirChain, how int) (same bool, err error) {
	if err := ignoringEINTR(func() error { return unix.Flock(c.fd(), how) }); err != nil {
		return false, fmt.Errorf("lock directory %s: %w", c.dirKey, err)
	}
	if len(c.segs) == 0 {
		return true, nil
	}
	open, err := fstat(c.fd())
	if err != nil {
		return false, fmt.Errorf("lock directory %s: %w", c.dirKey, err)
	}
	cur, err := lstatAt(c.fds[len(c.fds)-2], c.segs[len(c.segs)-1])
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock directory %s: %w", c.dirKey, err)
	}
	return sameFile(&open, &cur), nil
}

// unlock drops the chain's flock, keeping its descriptors open.
func (c *dirChain) unlock() {
	_ = unix.Flock(c.fd(), unix.LOCK_UN)
}

// sync fsyncs the chain's directory so entries created or removed in it
// are durable.
func (c *dirChain) sync() error {
	return ignoringEINTR(func() error { return unix.Fsync(c.fd()) })
}
