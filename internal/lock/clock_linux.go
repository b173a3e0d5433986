package lock

import (
	"time"

	"golang.org/x/sys/unix"
)

// bootClock reads CLOCK_BOOTTIME: it keeps counting while the machine (or
// its VM) is suspended, and no wall-clock step moves it. A holder measures
// its own lease with it, so a process frozen for minutes sees, when it
// resumes, that those minutes passed. Readings are only ever subtracted.
func bootClock() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("lock: clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // Linux has had it since 2.6.39
	}
	return time.Unix(ts.Unix())
}
