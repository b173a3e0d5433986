package local

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the root's identity. The root path is the one path the
// kernel resolves whole, links included, and it is resolved again by
// every call (a Store holds no descriptor: it has no Close, and a pass
// opens its stores afresh). A path can come to name another directory
// between two calls: a release symlink flipped (current -> v1 becomes
// current -> v2) or a restore swapped in (mv db db.old; mv db.restored db).
// The other directory may hold a live table of the very name being
// purged, so every call checks, by fstat of the descriptor it then acts
// through (no window between the check and the act), that the root is
// still the directory Open checked: same device and inode, same mount and
// birth time where the kernel reports them (an inode number can be reused
// once its directory is gone; its birth time cannot). A root that names
// anything else fails the call with an *objstore.RootChangedError, before
// anything is read or changed through it.

// statxMask is what a statx of a directory or an entry asks for.
const statxMask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID | unix.STATX_BTIME

// identity identifies a directory across opens.
type identity struct {
	dev, ino uint64
	mnt      mountID
	btime    time.Time // zero where the file system keeps none
}

// identityOf reads the identity from a statx result.
func identityOf(st *unix.Statx_t) identity {
	id := identity{dev: statxDev(st), ino: st.Ino, mnt: mountOf(st)}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.btime = time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
	}
	return id
}

// same reports whether b is the directory a describes. A field either side
// does not know (mount id, birth time) is not compared.
func (a identity) same(b identity) bool {
	return a.dev == b.dev && a.ino == b.ino && a.mnt.same(b.mnt) &&
		(a.btime.IsZero() || b.btime.IsZero() || a.btime.Equal(b.btime))
}

func (a identity) String() string {
	s := fmt.Sprintf("the directory with device %d:%d inode %d", unix.Major(a.dev), unix.Minor(a.dev), a.ino)
	if a.mnt.known {
		s += fmt.Sprintf(" on mount %d", a.mnt.id)
	}
	if !a.btime.IsZero() {
		s += " created " + a.btime.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// openRootDir opens the root path (links followed) and describes what it
// names now.
func openRootDir(path string) (int, identity, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, identity{}, err
	}
	st, err := fstatx(fd)
	if err != nil {
		_ = unix.Close(fd)
		return -1, identity{}, fmt.Errorf("stat: %w", err)
	}
	return fd, identityOf(&st), nil
}

// openRoot opens the root directory and checks that it is the one Open
// checked; the descriptor it returns is the one every call acts through.
func (s *Store) openRoot() (int, error) {
	fd, id, err := openRootDir(s.root)
	switch {
	case isNotFound(err):
		return -1, s.rootChanged("nothing: no directory is there")
	case err != nil:
		return -1, fmt.Errorf("open root %s: %w", s.root, err)
	case !s.id.same(id):
		_ = unix.Close(fd)
		return -1, s.rootChanged(id.String())
	}
	return fd, nil
}

// rootChanged is the refusal of a root that names now, not the directory
// Open checked.
func (s *Store) rootChanged(now string) error {
	return &objstore.RootChangedError{Root: s.root, Was: s.id.String(), Now: now}
}
