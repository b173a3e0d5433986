package chaos

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// TestPauseLocal stops a running `reaper purge` (A) with SIGSTOP at a seeded
// random point of its pass (a random delay after its first log line), for
// longer than its leases: until the store's clock allows every lease A
// holds to be taken over (LastModified + 400ms + 1s + skew). Meanwhile
// another process acts on the root, by the round's seeded mode:
//
//   - takeover: a second purge (B) takes A's leases over and finishes
//     every due table;
//   - recreate: the same, then every table A had in progress, now gone, is
//     created again as a live table with the same keys (new bytes), as a
//     user re-creating a dropped table would: a purge that deleted by its
//     stale key list would destroy it;
//   - revive: `reaper revive` takes over the lease of a table A had in
//     progress and revives it when A had not committed (or is refused,
//     "partially purged: cannot revive", when A had), then B purges the
//     rest.
//
// Then A is resumed (SIGCONT) and runs to its end. After every step the
// invariants hold (checkSafe): nothing of a live, revived, recreated or
// held table is touched, nothing outside the root (half the rounds have a
// link table pointing there), and every table is whole with or without its
// marker, committed and finishable, or fully gone. The resumed A must
// delete nothing it no longer owns: whatever disappears after it resumes
// belongs to a table it purged afresh; every table whose lease it held
// when stopped (its marker still there) is reported failed, lease_lost, and
// A exits 1; and no table is purged twice: one purged row per table in the
// audit ledger that A, B and the converging passes share.
//
// A local purge holds a directory's flock for the microseconds of a
// rename or an unlink loop; a process stopped inside that window blocks
// every other writer of that directory until it resumes (safe: they ask
// the fence after the lock). When B or the revive waits on A's flock, A is
// resumed at once (counted as "flock unblocks") and the round goes on with
// both running.
func TestPauseLocal(t *testing.T) {
	t.Parallel()
	rounds := knob(t, "REAPER_TEST_CHAOS_PAUSES", 12, 200)
	pauseSuite(t, localChaos(rounds))
}

// TestPauseS3 does the same on S3, stopping A when the proxy sees its k-th
// request (seeded), which is then forwarded: it lands at once, as it
// would from a process stopped right after sending it. Requests A had
// already sent in full land too (the test waits for them before anyone
// else acts); one whose body was still arriving when A stopped is dropped,
// as a server times out a stalled upload (never forwarded after a
// takeover: see docs/PROTOCOL.md, A1). Leases are s3LeaseTTL (2s); the
// takeover waits for the store's clock (Date) to pass LastModified + 2s +
// 1s + skew.
func TestPauseS3(t *testing.T) {
	t.Parallel()
	rounds := knob(t, "REAPER_TEST_CHAOS_S3_PAUSES", 4, 60)
	pauseSuite(t, s3Chaos(rounds))
}

// pauseStats counts what the stops hit, so a suite whose stops never land
// inside a purge fails instead of testing nothing.
type pauseStats struct {
	rounds, finishedFirst, withLeases, lost, lostCommitted atomic.Int64
	revived, reviveRefused, recreated                      atomic.Int64
	flockUnblocks, straddled                               atomic.Int64

	mu    sync.Mutex
	modes map[string]int
}

func (st *pauseStats) mode(m string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.modes[m]++
}

const (
	modeTakeover = "takeover"
	modeRecreate = "recreate"
	modeRevive   = "revive"
)

func pauseSuite(t *testing.T, cfg crashConfig) {
	base := baseSeed(t)
	st := &pauseStats{modes: map[string]int{}}
	w := calibrate(t, cfg, base)
	t.Logf("calibrated full pass: %v", w)
	for i := range cfg.kills {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			pauseRound(t, cfg, seed, w, st)
		})
	}
	t.Cleanup(func() {
		t.Logf("%d stopped rounds (%v), %d runs finished before their stop point; A held leases in %d rounds, lost %d tables (%d committed); %d revived, %d revives refused, %d tables recreated; %d flock unblocks; %d half-sent requests dropped",
			st.rounds.Load(), st.modes, st.finishedFirst.Load(), st.withLeases.Load(), st.lost.Load(), st.lostCommitted.Load(),
			st.revived.Load(), st.reviveRefused.Load(), st.recreated.Load(), st.flockUnblocks.Load(), st.straddled.Load())
		if !t.Failed() {
			require.Equal(t, int64(cfg.kills), st.rounds.Load(), "rounds stopped")
			if cfg.kills >= 4 {
				require.Positive(t, st.lost.Load(), "no stop caught A holding a table's lease: the stop points test nothing")
			}
		}
	})
}

// pauseRound draws a root and a stop point, stops A there and runs the
// round's mode. A run that finishes before its stop point is retried on a
// fresh root with the stop drawn from what that run took.
func pauseRound(t *testing.T, cfg crashConfig, seed uint64, w window, st *pauseStats) {
	rng := newRand(seed)
	mode := []string{modeTakeover, modeRecreate, modeRevive}[rng.IntN(3)]
	m := mix{kindDue: 8, kindNotDue: 1, kindLive: 2, kindOrphan: 1, kindHeld: 1}
	// Half the rounds have a link table (it fails every pass: exit 1);
	// the others have no table that fails by itself, so A's exit status
	// says whether it reported a lost lease.
	if rng.IntN(2) == 0 {
		m[kindLink] = 1
	}
	win := w
	for attempt := 1; ; attempt++ {
		if attempt > 8 {
			t.Fatalf("seed %d: A finished before its stop point %d times (window %v)", seed, attempt-1, win)
		}
		b := cfg.newRoot(t)
		f := newFixture(rng, m, cfg.files)
		f.write(t, b)
		var px *proxy
		endpoint := ""
		if cfg.proxied {
			px = b.proxy(t, seed+uint64(attempt))
			endpoint = px.URL()
		}
		audit := filepath.Join(t.TempDir(), "audit")
		args := append(purgeArgs(cfg.leaseTTL, cfg.skew, "--set", "audit.location="+audit), b.rootArgs(endpoint)...)
		a, point, stopped := startAndStop(t, px, args, rng, win)
		if !stopped {
			r := a.wait(t)
			st.finishedFirst.Add(1)
			if px != nil {
				win.requests = max(px.requests.Load(), 1)
			} else {
				win.work = max(r.dur/2, time.Millisecond)
			}
			continue
		}
		st.rounds.Add(1)
		st.mode(mode)
		pr := &pausedRun{t: t, cfg: cfg, seed: seed, mode: mode, rng: rng, b: b, f: f, px: px, args: args, audit: audit, a: a, st: st,
			where: fmt.Sprintf("seed %d (%s, A stopped %s, attempt %d)", seed, mode, point, attempt)}
		pr.run()
		return
	}
}

// startAndStop starts A and stops it at a point drawn from the window: a
// delay after its first log line (local), or its k-th request at the
// proxy (S3). It returns once A is stopped (every thread), or has exited.
func startAndStop(t *testing.T, px *proxy, args []string, rng *rand.Rand, win window) (*proc, string, bool) {
	ready := make(chan struct{})
	stopped := make(chan struct{})
	var a *proc
	stop := func() {
		<-ready
		if a.signal(syscall.SIGSTOP) {
			close(stopped)
		}
	}
	var point string
	var k *killer
	var timer *time.Timer
	var mu sync.Mutex
	if px != nil {
		n := 1 + rng.Int64N(win.requests)
		point = fmt.Sprintf("at request %d", n)
		px.setHook(func(i int64, _ *http.Request) (hookAction, func()) {
			if i != n {
				return hookPass, nil
			}
			return hookPass, func() { px.freeze(); stop() } // then forwarded: it lands now
		})
	} else {
		delay := time.Duration(rng.Int64N(int64(win.work) + 1))
		point = fmt.Sprintf("%dµs after pass start", delay.Microseconds())
		k = &killer{line: func(line string, _ func()) {
			mu.Lock()
			defer mu.Unlock()
			if timer == nil && strings.Contains(line, `msg="pass started"`) {
				timer = time.AfterFunc(delay, stop) // the stop point itself
			}
		}}
	}
	a = startReaper(t, args, nil, k)
	close(ready)
	select {
	case <-stopped:
	case <-a.done:
	}
	mu.Lock()
	if timer != nil {
		timer.Stop()
	}
	mu.Unlock()
	if px != nil {
		px.setHook(nil)
	}
	select {
	case <-stopped:
	default:
		return a, point, false
	}
	if !threadsStopped(t, a.pid()) {
		// It exited just as it was stopped.
		a.signal(syscall.SIGCONT)
		return a, point, false
	}
	return a, point, true
}

// pausedRun is one round from the moment A is stopped.
type pausedRun struct {
	t     *testing.T
	cfg   crashConfig
	seed  uint64
	mode  string
	rng   *rand.Rand
	b     *backend
	f     *fixture
	px    *proxy
	args  []string
	audit string
	a     *proc
	st    *pauseStats
	where string

	resumed   bool
	lost      []string        // tables whose lease A held, marker present, when stopped
	markerByB []string        // of those, the ones A counted though B removed their marker (checkA)
	recreated map[string]bool // tables created again after B purged them
}

func (pr *pausedRun) run() {
	t, b, f := pr.t, pr.b, pr.f
	pr.recreated = map[string]bool{}
	if pr.px != nil {
		pr.px.settle(t) // what A sent before it stopped has landed
	}
	s0 := take(t, b)
	checkSafe(t, f, s0, pr.where+", A stopped")
	mine := map[string]bool{}
	var held []string
	owner := fmt.Sprintf("/%d", pr.a.pid())
	ownLeases := leases(t, b)
	for k, info := range ownLeases {
		if !strings.HasSuffix(info.Owner, owner) {
			delete(ownLeases, k)
			continue
		}
		name := strings.TrimSuffix(k, lifecycle.LockSuffix)
		held = append(held, name)
		mine[name] = true
		if tb := f.byName[name]; tb != nil && tb.kind.purgeable() && stateOf(tb, s0).marker == markerOriginal {
			pr.lost = append(pr.lost, name)
			if stateOf(tb, s0).commit == commitMatches {
				pr.st.lostCommitted.Add(1)
			}
		}
	}
	slices.Sort(pr.lost)
	slices.Sort(held)
	if len(held) > 0 {
		pr.st.withLeases.Add(1)
	}
	pr.st.lost.Add(int64(len(pr.lost)))
	t.Logf("%s: A held leases on %v; lost if taken over: %v", pr.where, held, pr.lost)

	// A is stopped for longer than its leases: until the store's clock
	// allows each of them to be taken over.
	if at := takeoverAt(ownLeases, pr.cfg.skew); !at.IsZero() {
		b.waitStore(t, at, pr.where+": wait for A's leases' takeover time")
	}

	switch pr.mode {
	case modeTakeover:
		pr.purgeB()
	case modeRecreate:
		pr.purgeB()
		if !pr.resumed {
			pr.recreate()
		}
	case modeRevive:
		pr.revive(s0)
		pr.purgeB()
	}
	var s1 snapshot
	if !pr.resumed {
		s1 = take(t, b)
		checkSafe(t, f, s1, pr.where+", after the others ran, A still stopped")
	}
	pr.resume()
	ra := pr.a.wait(t)
	s2 := take(t, b)
	checkSafe(t, f, s2, pr.where+", A resumed and finished")
	pr.checkA(ra, s1, s2)

	converge(t, b, f, pr.args, pr.cfg.skew, pr.where+", converging")
	pr.checkLedger(passID(t, ra))
}

// passID is the pass id a purge logged with its first line.
func passID(t testing.TB, r result) string {
	t.Helper()
	for _, line := range strings.Split(string(r.stderr), "\n") {
		if !strings.Contains(line, `msg="pass started"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "pass_id="); ok {
				return id
			}
		}
	}
	t.Fatalf("no pass id in the log:\n%s", r)
	return ""
}

// resume lets A run again.
func (pr *pausedRun) resume() {
	if pr.resumed {
		return
	}
	pr.resumed = true
	if pr.px != nil {
		pr.px.thaw()
	}
	pr.a.signal(syscall.SIGCONT)
}

// others runs a process while A is stopped. Should it wait on a flock A
// holds (a local directory lock A was stopped inside), A is resumed.
func (pr *pausedRun) others(args []string) result {
	t := pr.t
	p := startReaper(t, args, nil, nil)
	deadline := time.Now().Add(runTimeout)
	for !p.finished() {
		if !pr.resumed && pr.b.dir != "" && flockWaiter(t, p.pid()) && holdsFlock(t, pr.a.pid()) {
			t.Logf("%s: %s waits on a flock A holds: resuming A", pr.where, args[0])
			pr.st.flockUnblocks.Add(1)
			pr.resume()
		}
		if time.Now().After(deadline) {
			break // wait reports the timeout
		}
		select {
		case <-p.done:
		case <-time.After(2 * time.Millisecond): // poll /proc/locks
		}
	}
	return p.wait(t)
}

// purgeB runs B, a whole purge pass with A's arguments (and ledger).
func (pr *pausedRun) purgeB() {
	t := pr.t
	args := slices.Clone(pr.args)
	if pr.px != nil {
		args = append(purgeArgs(pr.cfg.leaseTTL, pr.cfg.skew, "--set", "audit.location="+pr.audit), pr.b.rootArgs("")...)
	}
	// B may lose its own lease when the machine starves it (2s leases on a
	// loaded machine: the store's clock passes its lease, or its own clock
	// its renewal margin, before it renews, and it stops, as it must; A is
	// stopped, so nobody else takes B's leases). That is B's own safety working, not a
	// fault of A's: a later pass finishes the table, so B runs again.
	var r result
	for attempt := 1; ; attempt++ {
		r = pr.others(args)
		require.Contains(t, []int{0, 1}, r.code, "%s: B:\n%s", pr.where, r)
		starved := false
		for _, e := range report(t, r).Failed {
			tb := pr.f.byName[e.Name]
			// Its own lease of a table, or of its audit journal (the
			// intent it must record before a commit).
			if (e.Code == "lease_lost" || strings.Contains(e.Error, "lease lost")) && attempt < 3 {
				starved = true
				continue
			}
			require.True(t, tb != nil && tb.kind == kindLink || pr.resumed && slices.Contains(pr.lost, e.Name),
				"%s: B failed %s: %s\n%s", pr.where, e.Name, e.Error, r)
		}
		if !starved {
			break
		}
		t.Logf("%s: B lost its own lease (starved, attempt %d); running B again", pr.where, attempt)
	}
	if !pr.resumed {
		// B ran alone: every due table is gone.
		snap := take(t, pr.b)
		for _, tb := range pr.f.tables {
			if tb.kind.purgeable() {
				s := stateOf(tb, snap)
				require.True(t, s.fullyGone() && s.marker == markerAbsent, "%s: B left a due table: %s\n%s", pr.where, s, r)
			}
		}
	}
}

// recreate creates again, as live tables with the same keys and new bytes,
// the tables A had in progress and B purged.
func (pr *pausedRun) recreate() {
	t := pr.t
	snap := take(t, pr.b)
	objs := map[string][]byte{}
	for _, name := range pr.lost {
		tb := pr.f.byName[name]
		if !stateOf(tb, snap).fullyGone() || len(tb.files) == 0 {
			continue
		}
		for k := range tb.files {
			tb.files[k] = append([]byte("created again after the purge: "), faketable.RandBytes(pr.rng, 32)...)
			objs[k] = tb.files[k]
		}
		tb.kind, tb.marker = kindLive, nil
		pr.recreated[name] = true
		pr.st.recreated.Add(1)
	}
	pr.b.putAll(t, objs)
}

// revive revives a table A had in progress: one it had not committed if
// there is one (it must be revived), else one it had committed (it must be
// refused), else a due table A had not reached (revived; A's plan still
// lists it).
func (pr *pausedRun) revive(s0 snapshot) {
	t := pr.t
	var uncommitted, committed, untouched []string
	for _, name := range pr.lost {
		tb := pr.f.byName[name]
		s := stateOf(tb, s0)
		switch {
		case tb.kind != kindDue:
		case s.commit == commitMatches:
			committed = append(committed, name)
		case s.intact():
			uncommitted = append(uncommitted, name)
			// else: data, directories and commit gone, the marker next
			// (an orphan marker): revive refuses a table without data.
		}
	}
	for _, tb := range pr.f.tables {
		if s := stateOf(tb, s0); tb.kind == kindDue && s.intact() && s.marker == markerOriginal && s.commit == commitAbsent && !slices.Contains(pr.lost, tb.name) {
			if _, leased := s0[lifecycle.LockKey(tb.name)]; !leased {
				untouched = append(untouched, tb.name)
			}
		}
	}
	var name string
	refuse := false
	switch {
	case len(uncommitted) > 0:
		name = uncommitted[pr.rng.IntN(len(uncommitted))]
	case len(committed) > 0:
		name, refuse = committed[pr.rng.IntN(len(committed))], true
	case len(untouched) > 0:
		name = untouched[pr.rng.IntN(len(untouched))]
	default:
		t.Logf("%s: no table to revive", pr.where)
		return
	}
	args := append(append([]string{"revive", "--skew-allowance", pr.cfg.skew.String()}, pr.b.rootArgs("")...), name)
	r := pr.others(args)
	tb := pr.f.byName[name]
	if refuse {
		require.Equal(t, 1, r.code, "%s: revive of %s, which A had committed, must be refused:\n%s", pr.where, name, r)
		require.Contains(t, string(r.stdout), "partially purged: cannot revive", "%s: %s", pr.where, r)
		pr.st.reviveRefused.Add(1)
		return
	}
	if pr.resumed && r.code != 0 {
		// A, resumed early (flock), may have committed meanwhile.
		t.Logf("%s: revive of %s after A resumed: %s", pr.where, name, strings.TrimSpace(string(r.stdout)))
		return
	}
	require.Equal(t, 0, r.code, "%s: revive of %s (A had not committed it):\n%s", pr.where, name, r)
	pr.f.revived(tb)
	pr.st.revived.Add(1)
	if !pr.resumed { // a snapshot taken while A runs would be torn
		checkSafe(t, pr.f, take(t, pr.b), pr.where+", after the revive of "+name)
	}
}

// checkA checks what the resumed A did and reported: s1 is the root just
// before it resumed (nil when it had to be resumed early), s2 after it
// ended.
func (pr *pausedRun) checkA(ra result, s1, s2 snapshot) {
	t := pr.t
	require.Contains(t, []int{0, 1}, ra.code, "%s: A:\n%s", pr.where, ra)
	rep := report(t, ra)
	out := rep.outcomes()
	purgedByA := map[string]bool{}
	for _, e := range rep.Purged {
		purgedByA[e.Name] = true
	}
	lostFailed := 0
	for _, name := range pr.lost {
		got := out[name]
		if got == "purged" && markerAnswerLost(ra.stderr, name) {
			// A sent its marker delete under the lease, the request was
			// lost with A's connection (the proxy drops a request A was
			// writing when stopped), and A, resumed, found the marker gone:
			// B had taken the lease over and removed it as an orphan
			// marker, A having deleted the data and the commit. A cannot
			// tell that from its own request having landed (a lease gone
			// is also what a sweep leaves), and counts the table
			// (docs/SAFETY.md); the ledger holds A's row and B's
			// orphan-marker row (checkLedger).
			pr.markerByB = append(pr.markerByB, name)
			continue
		}
		lostFailed++
		require.True(t, strings.HasPrefix(got, "failed: ") && strings.Contains(got, "lease lost"),
			"%s: A held the lease of %s when stopped and lost it to a takeover; it must report it failed (lease_lost), got %q\n%s", pr.where, name, got, ra)
	}
	// Exit 1 for a failed table, or for a ledger write lost: stopped past
	// its journal's lease, A may find its journal taken over.
	require.Equal(t, len(rep.Failed) > 0 || len(rep.LedgerErrors) > 0, ra.code == 1, "%s: A's exit status and its failures:\n%s", pr.where, ra)
	if lostFailed > 0 {
		require.Equal(t, 1, ra.code, "%s: A lost leases: exit 1\n%s", pr.where, ra)
	}
	if s1 == nil {
		return
	}
	// Whatever disappeared after A resumed belongs to a table A purged
	// afresh (a lease it took after resuming).
	for k := range s1 {
		if _, ok := s2[k]; ok || strings.HasSuffix(k, lifecycle.LockSuffix) {
			continue
		}
		name := tableOfKey(pr.f, k)
		require.True(t, name != "" && purgedByA[name] && !slices.Contains(pr.lost, name),
			"%s: %s disappeared after A resumed, though A purged no table it belongs to (%q)\n%s", pr.where, k, name, ra)
	}
}

// markerAnswerLost reports whether A logged, for table name, that its
// marker delete's answer was lost and the marker found gone.
func markerAnswerLost(stderr []byte, name string) bool {
	for line := range strings.SplitSeq(string(stderr), "\n") {
		if strings.Contains(line, "the marker delete's answer was lost") && strings.Contains(line, "table="+name+" ") {
			return true
		}
	}
	return false
}

// tableOfKey names the fixture table a key (data, marker, commit, hold)
// belongs to, or "".
func tableOfKey(f *fixture, key string) string {
	for _, tb := range f.tables {
		if strings.HasPrefix(key, lifecycle.TableDir(tb.name)) || key == lifecycle.MarkerKey(tb.name) || key == lifecycle.CommitKey(tb.name) || key == lifecycle.HoldKey(tb.name) {
			return tb.name
		}
	}
	return ""
}

// checkLedger reads the rows of A, B and the converging passes: every table
// that was due is purged exactly once (a recreated one by B, before it
// was created again), a revived one never, the others never; A's row for a
// table it lost says lease_lost.
func (pr *pausedRun) checkLedger(aPass string) {
	t := pr.t
	rows := ledgerRows(t, pr.audit)
	purged := map[string]int{}
	for _, row := range rows {
		// B's removal of the marker A's lost request left (checkA) is
		// an orphan marker's purge of a table A counted.
		if row.Action == string(outcome.Purged) && !(row.PassID != aPass && slices.Contains(pr.markerByB, row.Table) && strings.HasPrefix(row.Reason, string(outcome.ReasonOrphanMarker))) {
			purged[row.Table]++
		}
	}
	for _, tb := range pr.f.tables {
		want := 0
		if tb.kind.purgeable() || pr.recreated[tb.name] {
			want = 1
		}
		require.Equal(t, want, purged[tb.name], "%s: %s (%s) purged %d times (ledger)", pr.where, tb.name, tb.kind, purged[tb.name])
	}
	aRows := 0
	for _, row := range rows {
		if row.PassID != aPass {
			continue
		}
		aRows++
		if slices.Contains(pr.lost, row.Table) && !slices.Contains(pr.markerByB, row.Table) {
			require.Equal(t, string(outcome.Failed), row.Action, "%s: A's row for %s: %+v", pr.where, row.Table, row)
			require.True(t, strings.HasPrefix(row.Reason, string(outcome.ReasonLeaseLost)), "%s: A's row for %s: %+v", pr.where, row.Table, row)
		}
	}
	require.Positive(t, aRows, "%s: no ledger row of A's pass %s", pr.where, aPass)
	pr.st.straddled.Add(pr.straddled())
}

func (pr *pausedRun) straddled() int64 {
	if pr.px == nil {
		return 0
	}
	return pr.px.straddled.Load()
}

// threadsStopped waits until every thread of pid is stopped (SIGSTOP is
// delivered to each thread asynchronously); false if the process exited.
func threadsStopped(t testing.TB, pid int) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		all, gone := true, false
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return false
		}
		for _, task := range tasks {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread ended
			}
			i := strings.LastIndexByte(string(stat), ')')
			if i < 0 || i+2 >= len(stat) {
				continue
			}
			switch stat[i+2] {
			case 'T', 't':
			case 'Z', 'X':
				gone = true
			default:
				all = false
			}
		}
		if gone {
			return false
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: not every thread stopped 10s after SIGSTOP", pid)
		}
		time.Sleep(100 * time.Microsecond) // poll /proc
	}
}

// procLocks parses /proc/locks into holders and waiters of flocks.
func procLocks(t testing.TB) (holders, waiters map[int]bool) {
	t.Helper()
	body, err := os.ReadFile("/proc/locks")
	require.NoError(t, err)
	holders, waiters = map[int]bool{}, map[int]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		fields := strings.Fields(line)
		dst := holders
		if len(fields) > 1 && fields[1] == "->" {
			dst, fields = waiters, fields[1:]
		}
		if len(fields) < 5 || fields[1] != "FLOCK" {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil {
			dst[pid] = true
		}
	}
	return holders, waiters
}

func holdsFlock(t testing.TB, pid int) bool {
	h, _ := procLocks(t)
	return h[pid]
}

func flockWaiter(t testing.TB, pid int) bool {
	_, w := procLocks(t)
	return w[pid]
}

// TestPauseLostLeaseReported pins down one stop point of the pause suite:
// A is stopped right after its lease of the table's <name>.reaper-lock was
// created (the proxy forwards A's create-if-absent, then A stops before it
// reads the answer), for longer than the lease. B then purges the table
// (taking the lease over), or a revive revives it. Resumed, A holds a lease
// whose deadline passed long ago (docs/PROTOCOL.md: past the deadline "the
// lease is lost"): it must delete nothing, and report the table failed,
// lease_lost, exit 1 (P7: a lost lease is a failure, counted and alerted).
func TestPauseLostLeaseReported(t *testing.T) {
	t.Parallel()
	for _, other := range []string{"purge", "revive"} {
		t.Run(other, func(t *testing.T) {
			t.Parallel()
			const leaseTTL = s3LeaseTTL
			b := s3Backend(t, "db")
			f := newFixture(newRand(21), mix{kindDue: 1, kindLive: 1}, [2]int{6, 6})
			f.write(t, b)
			tb := f.tables[0]
			px := newProxy(t, b.srv, 21)
			ready, stopped := make(chan struct{}), make(chan struct{})
			var a *proc
			var once sync.Once
			px.setHook(func(_ int64, r *http.Request) (hookAction, func()) {
				if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/"+lifecycle.LockKey(tb.name)) || r.Header.Get("If-None-Match") == "" {
					return hookPass, nil
				}
				return hookPass, func() {
					once.Do(func() {
						px.freeze()
						<-ready
						require.True(t, a.signal(syscall.SIGSTOP))
						close(stopped)
					})
				}
			})
			audit := filepath.Join(t.TempDir(), "audit")
			a = startReaper(t, append(purgeArgs(leaseTTL, shortSkew, "--set", "audit.location="+audit), b.rootArgs(px.URL())...), nil, nil)
			close(ready)
			select {
			case <-stopped:
			case <-a.done:
				t.Fatalf("A ended before taking the lease:\n%s", a.wait(t))
			}
			require.True(t, threadsStopped(t, a.pid()))
			px.settle(t)
			px.setHook(nil)
			info := leases(t, b)[lifecycle.LockKey(tb.name)]
			require.NotEmpty(t, info.Owner, "A's lease was created")
			b.waitStore(t, info.TakeoverAt(info.Modified, shortSkew), "wait for A's lease's takeover time")
			if other == "purge" {
				r := reaper(t, append(purgeArgs(leaseTTL, shortSkew, "--set", "audit.location="+audit), b.rootArgs("")...)...)
				require.Equal(t, "purged", report(t, r).outcomes()[tb.name], "B:\n%s", r)
			} else {
				r := reaper(t, append(append([]string{"revive", "--skew-allowance", shortSkew.String()}, b.rootArgs("")...), tb.name)...)
				require.Equal(t, 0, r.code, "revive:\n%s", r)
				f.revived(tb)
			}
			before := take(t, b)
			checkSafe(t, f, before, "A stopped, "+other+" done")
			px.thaw()
			a.signal(syscall.SIGCONT)
			ra := a.wait(t)
			after := take(t, b)
			checkSafe(t, f, after, "A resumed")
			require.Equal(t, before.withoutDirs(), after.withoutDirs(), "the resumed A deleted or wrote something")
			got := report(t, ra).outcomes()[tb.name]
			require.True(t, strings.HasPrefix(got, "failed: ") && strings.Contains(got, "lease lost"),
				"A's lease of %s was lost while it was stopped (its deadline passed, another process took the lease over); "+
					"the table must be reported failed (lease_lost) and A exit 1, got %q, exit %d\n%s", tb.name, got, ra.code, ra)
			require.Equal(t, 1, ra.code, "%s", ra)
		})
	}
}
