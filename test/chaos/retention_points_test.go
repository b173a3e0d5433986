package chaos

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// Kill and stop points of the retention chaos suite. A pass spends most of
// a table's lease reading manifests; the deletes run between its record's
// write and its removal, a few milliseconds on a local disk. Half the
// points are drawn after a table's lease is acquired (the pass's log line),
// within how long the last pass that cleaned the table held it; the other
// half after its record appears (inotify on the root directory), within
// how long the last record lived.

// Events a pass goes through for one table.
const (
	evAcquired      = "acquired"
	evReleased      = "released"
	evRecord        = "record"
	evRecordRemoved = "record removed"
)

// pointWatch times each table's lease and record from the passes'
// events and arms at most one action: act, delay after a chosen event.
type pointWatch struct {
	mu                  sync.Mutex
	leaseAt, recordAt   map[string]time.Time
	leaseWin, recordWin map[string]time.Duration
	// worked: the current lease of the table saw a record (the pass had
	// something to delete), so its length is a window worth drawing in.
	worked map[string]bool
	armed  *armedPoint
}

// anyTable arms a point at an event of whichever table has it first.
const anyTable = "*"

// armedPoint is one pending kill or stop.
type armedPoint struct {
	event, table string
	delay        time.Duration
	act          func()
	timer        *time.Timer
}

func newPointWatch() *pointWatch {
	return &pointWatch{leaseAt: map[string]time.Time{}, recordAt: map[string]time.Time{},
		leaseWin: map[string]time.Duration{}, recordWin: map[string]time.Duration{}, worked: map[string]bool{}}
}

// line feeds a pass's log line (a killer's line callback).
func (w *pointWatch) line(line string, _ func()) {
	table := ""
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "table="); ok {
			table = v
		}
	}
	switch {
	case strings.Contains(line, "msg=acquired"):
		w.event(evAcquired, table)
	case strings.Contains(line, "msg=released"):
		w.event(evReleased, table)
	}
}

func (w *pointWatch) event(ev, table string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	switch ev {
	case evAcquired:
		w.leaseAt[table], w.worked[table] = now, false
	case evReleased:
		if at, ok := w.leaseAt[table]; ok && w.worked[table] {
			w.leaseWin[table] = max(now.Sub(at), time.Millisecond)
		}
	case evRecord:
		w.recordAt[table], w.worked[table] = now, true
	case evRecordRemoved:
		if at, ok := w.recordAt[table]; ok {
			w.recordWin[table] = max(now.Sub(at), 100*time.Microsecond)
		}
	}
	if a := w.armed; a != nil && a.timer == nil && a.event == ev && (a.table == table || a.table == anyTable) {
		a.timer = time.AfterFunc(a.delay, a.act)
	}
}

// arm sets act to run delay after event ev of table; disarm cancels it
// and reports whether it had fired or was pending.
func (w *pointWatch) arm(ev, table string, delay time.Duration, act func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = &armedPoint{event: ev, table: table, delay: delay, act: act}
}

func (w *pointWatch) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.armed; a != nil && a.timer != nil {
		a.timer.Stop()
	}
	w.armed = nil
}

// window is how long to draw a point in after ev for table: the last
// measured lease or record of a pass that had something to delete (a
// guess until one was seen).
func (w *pointWatch) window(ev, table string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev == evRecord {
		return cmpOr(w.recordWin[table], 3*time.Millisecond)
	}
	return cmpOr(w.leaseWin[table], 20*time.Millisecond)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// watchRecords reports the retention records written and removed in the
// local root dir to w until the test ends.
func watchRecords(t testing.TB, dir string, w *pointWatch) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE|unix.IN_MOVED_FROM); err != nil {
		unix.Close(fd)
		t.Fatalf("inotify %s: %v", dir, err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		<-stopped
		unix.Close(fd)
	})
	go func() {
		defer close(stopped)
		buf := make([]byte, 64*1024)
		for {
			select {
			case <-done:
				return
			default:
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 50); err != nil || n == 0 {
				continue // a timeout, to see done; EINTR
			}
			n, err := unix.Read(fd, buf)
			if err != nil {
				continue // EAGAIN
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				table, ok := strings.CutSuffix(name, lifecycle.RetainSuffix)
				if !ok {
					continue
				}
				if ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
					w.event(evRecord, table)
				} else {
					w.event(evRecordRemoved, table)
				}
			}
		}
	}()
}
