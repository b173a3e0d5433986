//go:build !linux

package lock

import "time"

// bootClock is the monotonic clock where CLOCK_BOOTTIME does not exist; it
// may not count a suspended machine.
func bootClock() time.Time { return time.Now() }
