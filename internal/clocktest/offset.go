package clocktest

import (
	"sync/atomic"
	"time"
)

// Offset is the real clock plus a jump the test adds with Advance: time
// keeps passing, as it does for a process that was frozen for a while and
// resumes. Use it where the code under test measures real durations (lease
// renewals) but a test must skip ahead; use Fake where nothing may move
// unless the test says so. It is safe for concurrent use; its zero value
// reads the real time.
type Offset struct{ off atomic.Int64 }

// Now is the real time plus every Advance so far.
func (c *Offset) Now() time.Time { return time.Now().Add(c.Offset()) }

// Advance moves the clock forward (or back, for d < 0) by d.
func (c *Offset) Advance(d time.Duration) { c.off.Add(int64(d)) }

// Offset is the sum of every Advance so far.
func (c *Offset) Offset() time.Duration { return time.Duration(c.off.Load()) }
