package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// rootMoveMix is the root a moved purge starts from: due tables big enough
// that a purge takes several delete batches of 1,000 (the stop lands
// inside one), and one of each kind that must never be purged.
var rootMoveMix = mix{kindDue: 3, kindNotDue: 1, kindLive: 1, kindOrphan: 1, kindHeld: 1}

// TestPauseRootMovedLocal stops a running `reaper purge` (A) with SIGSTOP
// a seeded moment after it logs its first purge commit, and while it is
// stopped repoints its root path to another directory holding a live
// copy of every table of the root (the same keys, other bytes), as a release
// or a restore does: by the round's mode, a symlink flip (current -> v1
// becomes current -> v2) or a directory swap (mv db db.old; mv
// db.restored db). Then A resumes: in half the rounds still holding its
// leases (15s), so it goes on deleting where it stopped, which is where
// the files of the live tables were lost; in the others having lost them
// (400ms), so its fence refuses first. A must act on nothing but the
// directory it opened: the directory the path names now is byte-identical
// (every live table whole, nothing written into it), A reports each table
// it had not finished failed, root_changed (never a bare lease_lost), and
// exits 1; its ledger rows say root_changed. The directory A opened holds
// its tables whole, committed and finishable, or gone (the invariants), and
// a later pass over it finishes them; a later pass over the path purges
// nothing of the live tables.
//
// Not parallel with the other suites: its rounds write and check tens of
// thousands of files, and the CPU they take would starve the 400ms leases
// of the pause and crash suites running beside it.
func TestPauseRootMovedLocal(t *testing.T) {
	rounds := knob(t, "REAPER_TEST_CHAOS_ROOT_MOVES", 4, 40)
	base := baseSeed(t)
	var midPurge, kept atomic.Int64
	for i := range rounds {
		seed := base + uint64(i)
		mode := []string{"symlink flip", "directory swap"}[i%2]
		lease := []time.Duration{15 * time.Second, 400 * time.Millisecond}[i/2%2]
		t.Run(fmt.Sprintf("%s/lease=%s/seed=%d", mode, lease, seed), func(t *testing.T) {
			t.Parallel()
			var inProgress, keptLease, stopped bool
			// A pass on tmpfs can finish before its log line reaches the
			// test: start the round again (fresh roots), as the pause
			// suite does, stopping at the commit line itself from the
			// second attempt on.
			for attempt := 0; attempt < 5 && !stopped; attempt++ {
				inProgress, keptLease, stopped = rootMoveRound(t, mode, lease, seed, attempt)
			}
			require.True(t, stopped, "seed %d: A ended before it could be stopped in 5 attempts", seed)
			if inProgress {
				midPurge.Add(1)
			}
			if keptLease {
				kept.Add(1)
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("%d of %d root moves landed while A had a committed table in progress; A resumed holding its lease in %d", midPurge.Load(), rounds, kept.Load())
		if !t.Failed() {
			require.Positive(t, midPurge.Load(), "no move landed inside a purge: the stop points test nothing")
			if rounds >= 2 {
				require.Positive(t, kept.Load(), "A never resumed holding its lease: nothing tested its deletes through the moved root")
			}
		}
	})
}

// movingRoot is a root path and the two directories it names in turn.
type movingRoot struct {
	path          string
	opened, moved string // the directory A opens, the one the path names after the move
	movedWas      string // where the moved-in directory was before the move
	move          func(t *testing.T)
}

func newMovingRoot(t *testing.T, mode string) *movingRoot {
	base := t.TempDir()
	r := &movingRoot{}
	switch mode {
	case "symlink flip":
		r.path, r.opened, r.moved = filepath.Join(base, "current"), filepath.Join(base, "v1"), filepath.Join(base, "v2")
		r.movedWas = r.moved
		r.move = func(t *testing.T) {
			require.NoError(t, os.Symlink(r.moved, r.path+".next"))
			require.NoError(t, os.Rename(r.path+".next", r.path))
		}
	default:
		r.path, r.opened, r.movedWas = filepath.Join(base, "db"), filepath.Join(base, "db"), filepath.Join(base, "db.restored")
		r.move = func(t *testing.T) {
			old := filepath.Join(base, "db.old")
			require.NoError(t, os.Rename(r.path, old))
			require.NoError(t, os.Rename(r.movedWas, r.path))
			r.opened, r.moved = old, r.path
		}
	}
	for _, d := range []string{r.opened, r.movedWas} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	if mode == "symlink flip" {
		require.NoError(t, os.Symlink(r.opened, r.path))
	}
	return r
}

// localBackendAt is a backend over dir whose sentinels outside the root
// were written for like (same parent, same base name): a root directory
// that moved keeps its sentinels where they were written.
func localBackendAt(t *testing.T, dir string, like *backend) *backend {
	t.Helper()
	b := openBackend(t, "local", dir, nil, dir, nil)
	if like != nil {
		b.base, b.parentDir, b.outside, b.outsidePrefixes = like.base, like.parentDir, like.outside, like.outsidePrefixes
	}
	return b
}

// rootMoveRound runs one round with leases of leaseTTL; it reports whether
// A had a committed table in progress when its root moved, and whether it
// resumed still holding its lease of that table.
func rootMoveRound(t *testing.T, mode string, leaseTTL time.Duration, seed uint64, attempt int) (inProgress, keptLease, stopped bool) {
	rng := newRand(seed)
	r := newMovingRoot(t, mode)
	where := fmt.Sprintf("seed %d (%s)", seed, mode)

	f := newFixture(rng, rootMoveMix, [2]int{1100, 1600})
	bOpened := localBackendAt(t, r.opened, nil)
	f.write(t, bOpened)
	g := restoredCopy(f, rng)
	bMoved := localBackendAt(t, r.movedWas, nil)
	g.write(t, bMoved)
	movedBefore := takeDir(t, r.movedWas, "")

	audit := filepath.Join(t.TempDir(), "audit")
	args := purgeArgs(leaseTTL, shortSkew, "--set", "audit.location="+audit,
		"--set", "limits.table_concurrency=1", "--set", "limits.delete_concurrency=1", "--set", "limits.max_delete_concurrency=1",
		"--root", r.path)
	delay := time.Duration(rng.Int64N(int64(5 * time.Millisecond)))
	if attempt > 0 {
		delay = 0
	}
	a, stoppedAt := startStoppedAfterCommit(t, args, delay)
	if stoppedAt.IsZero() {
		t.Logf("%s: A ended before it was stopped (attempt %d); starting the round again:\n%s", where, attempt, a.wait(t))
		return false, false, false
	}
	s0 := take(t, bOpened)
	checkSafe(t, f, s0, where+", A stopped")
	var committed []string
	left := 0
	for _, tb := range f.tables {
		st := stateOf(tb, s0)
		if tb.kind == kindDue && st.commit == commitMatches {
			committed = append(committed, tb.name)
		}
		if tb.kind == kindDue && !(st.fullyGone() && st.marker == markerAbsent) {
			left++
		}
	}
	if left == 0 {
		// The stop landed after A had finished every table (a loaded
		// machine sees the commit late): nothing is left for a move to
		// cut, so the round says nothing. Start it again.
		a.signal(syscall.SIGCONT)
		t.Logf("%s: A had finished every table when it was stopped (attempt %d); starting the round again:\n%s", where, attempt, a.wait(t))
		return false, false, false
	}

	r.move(t)
	bOpened, bMoved = localBackendAt(t, r.opened, bOpened), localBackendAt(t, r.moved, bMoved)
	// Its deadline is TTL - TTL/10 after its last lease write, before the stop.
	keptLease = time.Since(stoppedAt) < leaseTTL*9/10
	a.signal(syscall.SIGCONT)
	ra := a.wait(t)

	require.Equal(t, movedBefore, takeDir(t, r.moved, ""), "%s: THE DIRECTORY THE ROOT NAMES NOW CHANGED\n%s", where, ra)
	checkSafe(t, g, take(t, bMoved), where+", the moved-in directory")
	checkSafe(t, f, take(t, bOpened), where+", the directory A opened, after A")
	checkMovedReport(t, f, ra, audit, where)

	// The directory A opened is finished by a pass over it; a pass over
	// the path purges nothing of the live tables there now.
	oldArgs := append(purgeArgs(leaseTTL, shortSkew, "--set", "audit.location="+audit), "--root", r.opened)
	converge(t, bOpened, f, oldArgs, shortSkew, where+", converging the directory A opened")
	rn := reaper(t, append(purgeArgs(leaseTTL, shortSkew), "--root", r.path)...)
	require.Equal(t, 0, rn.code, "%s: a pass over the path:\n%s", where, rn)
	require.Equal(t, movedBefore, takeDir(t, r.moved, ""), "%s: a pass over the path changed its live tables\n%s", where, rn)
	return len(committed) > 0, keptLease, true
}

// restoredCopy is what the root path names after the move: a restored
// copy of the root, every table live (revived since the copy was made)
// with the very keys of f's, so every key A has in hand names a live file
// there, and other bytes.
func restoredCopy(f *fixture, rng *rand.Rand) *fixture {
	g := &fixture{byName: map[string]*table{}, fixed: map[string]string{}, bystander: f.bystander}
	for _, tb := range f.tables {
		c := &table{name: tb.name, kind: kindLive, files: map[string][]byte{}}
		for k := range tb.files {
			c.files[k] = append([]byte("restored, live: "), faketable.RandBytes(rng, 16)...)
		}
		g.tables = append(g.tables, c)
		g.byName[c.name] = c
	}
	return g
}

// checkMovedReport checks A's report and ledger rows: every due table it
// did not finish before the move failed with root_changed, saying so.
func checkMovedReport(t *testing.T, f *fixture, ra result, audit, where string) {
	t.Helper()
	require.Equal(t, 1, ra.code, "%s: A's root moved: exit 1\n%s", where, ra)
	rep := report(t, ra)
	failed := map[string]string{}
	for _, e := range rep.Failed {
		require.Equal(t, string(outcome.ReasonRootChanged), e.Code, "%s: %s failed with %s, not root_changed: %s\n%s", where, e.Name, e.Code, e.Error, ra)
		require.Contains(t, e.Error, "the root changed", "%s: %s\n%s", where, e.Name, ra)
		failed[e.Name] = e.Code
	}
	purged := map[string]bool{}
	for _, e := range rep.Purged {
		purged[e.Name] = true
	}
	for _, tb := range f.tables {
		if tb.kind.purgeable() {
			require.True(t, purged[tb.name] || failed[tb.name] != "", "%s: due table %s neither purged before the move nor failed: %v\n%s", where, tb.name, rep.outcomes()[tb.name], ra)
		}
	}
	require.NotEmpty(t, failed, "%s: A reported no root change\n%s", where, ra)
	require.Contains(t, string(ra.stderr), "the root changed", "%s: A's log", where)
	for _, row := range ledgerRows(t, audit) {
		if failed[row.Table] != "" && row.Action == string(outcome.Failed) {
			require.True(t, strings.HasPrefix(row.Reason, string(outcome.ReasonRootChanged)+": "), "%s: ledger row %+v", where, row)
		}
	}
}

// startStoppedAfterCommit starts A and stops it (SIGSTOP, every thread)
// delay after it logs its first purge commit. stoppedAt is when it was
// stopped, zero if A ended first.
func startStoppedAfterCommit(t *testing.T, args []string, delay time.Duration) (_ *proc, stoppedAt time.Time) {
	ready, stopped := make(chan struct{}), make(chan struct{})
	var a *proc
	var once sync.Once
	k := &killer{line: func(line string, _ func()) {
		if !strings.Contains(line, `msg="purge committed"`) {
			return
		}
		once.Do(func() {
			time.AfterFunc(delay, func() { // the stop point itself
				<-ready
				at := time.Now()
				if a.signal(syscall.SIGSTOP) {
					stoppedAt = at
					close(stopped)
				}
			})
		})
	}}
	a = startReaper(t, args, nil, k)
	close(ready)
	select {
	case <-stopped:
	case <-a.done:
		return a, time.Time{}
	}
	if !threadsStopped(t, a.pid()) {
		a.signal(syscall.SIGCONT)
		return a, time.Time{}
	}
	return a, stoppedAt
}
