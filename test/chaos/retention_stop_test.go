package chaos

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// The stop rounds of the retention chaos suite: a pass frozen (SIGSTOP)
// past its lease while another takes it over, then resumed.

// stopPass stops pass A at a drawn point (rc.point; up to three passes,
// as one whose drawn table has nothing to delete ends first), then starts
// the round's writes, waits until the store's clock allows A's leases
// (and any a killed pass left) to be taken over, runs pass B beside the
// writer, resumes A and lets it finish.
func (rc *retainChaos) stopPass(where string) writeAnswer {
	t := rc.t
	var a *proc
	for attempt := 0; a == nil; attempt++ {
		if attempt == 3 {
			// Each pass ended before its stop point (the drawn table
			// had nothing to delete): the round writes and runs.
			return rc.runWhileWriting(rc.startWrite(), where)
		}
		a = rc.startStopped(where)
	}
	rc.st.stops.Add(1)
	owner := fmt.Sprintf("/%d", a.pid())
	var held []string
	for k, info := range leases(t, rc.b) {
		if strings.HasSuffix(info.Owner, owner) {
			held = append(held, strings.TrimSuffix(k, lifecycle.LockSuffix))
		}
	}
	ch := rc.startWrite()
	waitTakeover(t, rc.b, shortSkew, where+": wait for the leases' takeover time")
	if !rc.passBeside(a, where) {
		a.signal(syscall.SIGCONT)
	}
	ra := a.wait(t)
	rc.checkResumed(ra, held, where)
	return <-ch
}

// startStopped starts a pass and stops it at a drawn point; it returns
// nil when the pass ended first.
func (rc *retainChaos) startStopped(where string) *proc {
	t := rc.t
	ev, table, delay := rc.point()
	stopped := make(chan struct{})
	ready := make(chan struct{})
	var a *proc
	rc.points.arm(ev, table, delay, func() {
		<-ready
		if a.signal(syscall.SIGSTOP) {
			close(stopped)
		}
	})
	a = startReaper(t, rc.retainArgs(), retainEnv, &killer{line: rc.points.line})
	close(ready)
	select {
	case <-stopped:
	case <-a.done:
	}
	rc.points.disarm()
	select {
	case <-stopped:
		if threadsStopped(t, a.pid()) {
			t.Logf("%s: A stopped %s after %s's %s", where, delay, table, ev)
			return a
		}
		a.signal(syscall.SIGCONT) // it exited as it was stopped
	default:
	}
	rc.st.finishedFirst.Add(1)
	rc.checkPass(a.wait(t), where, "locked")
	return nil
}

// passBeside runs pass B while A is stopped; should B wait on a directory
// flock A holds (A was stopped inside a local delete), A is resumed. It
// reports whether A was.
func (rc *retainChaos) passBeside(a *proc, where string) bool {
	t := rc.t
	p := startReaper(t, rc.retainArgs(), retainEnv, &killer{line: rc.points.line})
	resumed := false
	for !p.finished() {
		if !resumed && flockWaiter(t, p.pid()) && holdsFlock(t, a.pid()) {
			t.Logf("%s: B waits on a flock A holds: resuming A", where)
			rc.st.flockUnblocks.Add(1)
			a.signal(syscall.SIGCONT)
			resumed = true
		}
		select {
		case <-p.done:
		case <-time.After(2 * time.Millisecond): // poll /proc/locks
		}
	}
	var also []string
	if resumed {
		also = append(also, "locked")
	}
	rc.checkPass(p.wait(t), where+", B", also...)
	return resumed
}

// checkResumed checks pass A once resumed: a table it reports failed
// lost its lease (B took over the one A held when stopped; a later one may
// be lost to starvation, as in any pass): nothing else may fail, and it
// exits 1 when a table failed, else 0.
func (rc *retainChaos) checkResumed(ra result, held []string, where string) {
	t := rc.t
	rc.st.passes.Add(1)
	rep := rc.tally(ra)
	lost, failed := 0, 0
	for _, tb := range rep.Tables {
		switch tb.Result {
		case "cleaned", "nothing_to_do":
		case "locked":
			// A killed pass's lease, met before A was stopped.
		case "failed":
			require.Contains(t, tb.Reason, "lease lost", "%s: A failed %s for another reason than a lost lease\n%s", where, tb.Name, ra)
			failed++
			if slices.Contains(held, tb.Name) {
				lost++
			} else {
				rc.st.starved.Add(1)
			}
		default:
			t.Fatalf("%s: A reports %s %s: %s\n%s", where, tb.Name, tb.Result, tb.Reason, ra)
		}
	}
	rc.st.lost.Add(int64(lost))
	require.Equal(t, min(failed, 1), ra.code, "%s: A's exit status\n%s", where, ra)
	t.Logf("%s: A held %v when stopped; resumed, it lost %d (exit %d)", where, held, lost, ra.code)
}
