package local

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the one-file-system rule: whatever removes entries (a
// delete, a prune) or lists them to be removed (a walk) stays on the
// root's mount, as rm --one-file-system does, and also does not enter a
// bind mount of the same device, which --one-file-system misses. Something
// mounted inside the root (a volume under a table's directory, a bind
// mount of another tree) belongs to another file system: a walk refuses
// it, naming the mount point, so a purge refuses the table before its
// commit; a delete or prune that meets a mount placed after the walk
// refuses too. The mount is told by statx's mount id (Linux 5.8+), on the
// descriptor the call acts through, with the device as the fallback.
// Reads and writes may cross a mount: they delete nothing (a shared
// _reaper/ switch may be mounted in).

// mountID identifies the mount an entry is on.
type mountID struct {
	dev   uint64
	id    uint64
	known bool // the kernel reported the mount id
}

// mountOf reads the mount of a statx result.
func mountOf(st *unix.Statx_t) mountID {
	return mountID{dev: statxDev(st), id: st.Mnt_id, known: st.Mask&unix.STATX_MNT_ID != 0}
}

// same reports whether b is on the mount a is: same mount id where both
// are known, else the same device.
func (a mountID) same(b mountID) bool {
	if a.dev != b.dev {
		return false
	}
	return !a.known || !b.known || a.id == b.id
}

// statxDev is the device of a statx result, as st_dev.
func statxDev(st *unix.Statx_t) uint64 { return unix.Mkdev(st.Dev_major, st.Dev_minor) }

// fstatx describes an open file (statx with AT_EMPTY_PATH).
func fstatx(fd int) (unix.Statx_t, error) {
	return statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
}

// lstatxAt describes name inside the directory dirfd without following a
// link. A name something is mounted on describes the mounted root, with
// its mount id: that is how a walk sees a file bind-mounted over an entry.
func lstatxAt(dirfd int, name string) (unix.Statx_t, error) {
	return statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW)
}

// statx is statx(2), or on a kernel without it (before 4.11) fstatat(2)
// with the mount id and birth time left unknown: mounts are then told by
// their device alone.
func statx(dirfd int, name string, flags int) (unix.Statx_t, error) {
	var st unix.Statx_t
	err := ignoringEINTR(func() error {
		return unix.Statx(dirfd, name, flags|unix.AT_STATX_SYNC_AS_STAT, statxMask, &st)
	})
	if !errors.Is(err, unix.ENOSYS) {
		return st, err
	}
	var old unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &old, flags) }); err != nil {
		return st, err
	}
	return unix.Statx_t{
		Mask: unix.STATX_BASIC_STATS, Mode: uint16(old.Mode), Ino: old.Ino, Size: uint64(old.Size),
		Dev_major: unix.Major(old.Dev), Dev_minor: unix.Minor(old.Dev),
		Mtime: unix.StatxTimestamp{Sec: old.Mtim.Sec, Nsec: uint32(old.Mtim.Nsec)},
		Ctime: unix.StatxTimestamp{Sec: old.Ctim.Sec, Nsec: uint32(old.Ctim.Nsec)},
	}, nil
}

// statOf is the part of a statx result reaper reads, as a Stat_t.
func statOf(st *unix.Statx_t) unix.Stat_t {
	return unix.Stat_t{
		Dev: statxDev(st), Ino: st.Ino, Mode: uint32(st.Mode), Size: int64(st.Size),
		Mtim: unix.Timespec{Sec: st.Mtime.Sec, Nsec: int64(st.Mtime.Nsec)},
		Ctim: unix.Timespec{Sec: st.Ctime.Sec, Nsec: int64(st.Ctime.Nsec)},
	}
}

// checkMount fails, wrapping objstore.ErrMountPoint and naming key, unless
// the directory fd is on the root's mount.
func (s *Store) checkMount(fd int, key string) error {
	st, err := fstatx(fd)
	if err != nil {
		return fmt.Errorf("stat %s: %w", key, err)
	}
	return s.onRootMount(&st, key)
}

// onRootMount fails, wrapping objstore.ErrMountPoint and naming key, unless
// st is on the root's mount.
func (s *Store) onRootMount(st *unix.Statx_t, key string) error {
	if s.id.mnt.same(mountOf(st)) {
		return nil
	}
	return mountPointError(key)
}

// mountPointError is the refusal of key, something mounted inside the root.
func mountPointError(key string) error {
	return fmt.Errorf("%s is a mount point (another file system, or a bind mount, is mounted there): "+
		"reaper never leaves the root's file system; unmount it, or move the mount out of the root: %w", key, objstore.ErrMountPoint)
}
