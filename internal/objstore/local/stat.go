package local

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// lstatAt describes name inside the directory dirfd without following a
// link (fstatat with AT_SYMLINK_NOFOLLOW).
func lstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

// fstat describes an open file.
func fstat(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) })
	return st, err
}

func isDir(st *unix.Stat_t) bool     { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// sameFile reports whether two stat results describe the same inode.
func sameFile(a, b *unix.Stat_t) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// objectOf builds an Object from an lstat result. The ETag combines inode,
// mtime and size: every write makes a new inode (temp file, then rename or
// link) and stamps a nanosecond mtime, so no two writes share one.
// LastModified is the later of mtime and ctime: ctime is the kernel's
// stamp of the inode's last change, which no user call can set back, so a
// file copied in with an old mtime still shows when it arrived.
func objectOf(key string, st *unix.Stat_t) objstore.Object {
	mtime := time.Unix(st.Mtim.Unix())
	ctime := time.Unix(st.Ctim.Unix())
	return objstore.Object{
		Key:          key,
		Size:         st.Size,
		ETag:         fmt.Sprintf("%x-%x-%x", st.Ino, mtime.UnixNano(), st.Size),
		LastModified: later(mtime, ctime),
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
