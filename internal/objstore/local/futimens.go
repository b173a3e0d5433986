package local

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// futimens sets the access and modification times of the open file fd:
// utimensat(fd, NULL, ts, 0), as the C library's futimens does. x/sys/unix
// has no wrapper for it on Linux (Futimes goes through /proc and keeps only
// microseconds).
func futimens(fd int, ts *[2]unix.Timespec) error {
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
