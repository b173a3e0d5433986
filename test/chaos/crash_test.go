package chaos

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crashMix is the root every crash chain starts from: due tables of varied
// size, and one of each kind a purge must never delete (a link table too:
// on a local root a symbolic link to a folder outside the root).
var crashMix = mix{kindDue: 8, kindNotDue: 1, kindLive: 2, kindOrphan: 1, kindInvalid: 1, kindHeld: 1, kindLink: 1}

// TestCrashLocal SIGKILLs `reaper purge` at random points on a local root:
// after a seeded random number of microseconds from the pass's start (its
// first log line; the ~100ms of process start before it touches nothing).
// Kills come in chains of 1-5 on one root, so a run may die while finishing
// an earlier victim's purge or taking over its lease; after every kill the
// invariants that hold at every instant are checked (checkSafe), and after
// the chain fault-free passes must converge: every due table gone with its
// marker, everything else byte-identical, no lease left past its takeover
// time. Markers cannot be back-dated: each root's due markers are written
// dated now with a 1ms TTL and the chain waits until they are due by the
// store's clock. A killed run's leases may be taken over once the store's
// clock passes their LastModified + lease TTL + 1s + skew allowance (400ms +
// 1s + 100ms here): each run waits for that instant first.
func TestCrashLocal(t *testing.T) {
	t.Parallel()
	kills := knob(t, "REAPER_TEST_CHAOS_KILLS", 200, 2000)
	crashSuite(t, localChaos(kills))
}

// TestCrashS3 does the same on S3, killing after the k-th request seen by
// the proxy in front of the server, either before forwarding it (it never
// happened) or after the server answered (it happened; nobody learnt it).
func TestCrashS3(t *testing.T) {
	t.Parallel()
	kills := knob(t, "REAPER_TEST_CHAOS_S3_KILLS", 24, 400)
	crashSuite(t, s3Chaos(kills))
}

// s3LeaseTTL is the lease of the S3 suites that stop or kill purges. Not
// 1s: S3 stamps LastModified to the whole second, and a holder verifying
// its lease against the store (before its commit and every batch) counts
// it lost once the store's clock passes that stamp + TTL - TTL/10, so with
// a 1s lease written late in a second a healthy purge loses its lease
// right after taking it ("frozen longer than its own clock shows").
const s3LeaseTTL = 2 * time.Second

type crashConfig struct {
	kills    int
	leaseTTL time.Duration
	skew     time.Duration
	newRoot  func(t *testing.T) *backend
	files    [2]int
	// proxied: the store is a server behind the fault proxy, and runs
	// are killed or stopped at their k-th request (else after a delay).
	proxied bool
}

// localChaos and s3Chaos are the roots, leases and table sizes the crash
// and pause suites share, for kills rounds.
func localChaos(kills int) crashConfig {
	return crashConfig{
		kills:    kills,
		leaseTTL: 400 * time.Millisecond,
		skew:     shortSkew,
		newRoot:  func(t *testing.T) *backend { return localBackend(t) },
		files:    [2]int{10, 60},
	}
}

func s3Chaos(kills int) crashConfig {
	return crashConfig{
		kills:    kills,
		leaseTTL: s3LeaseTTL,
		skew:     shortSkew,
		newRoot:  func(t *testing.T) *backend { return s3Backend(t, "db") },
		files:    [2]int{4, 20},
		proxied:  true,
	}
}

// crashStats counts where kills landed, to show the kill points hit the
// interesting phases (and to fail if they never do).
type crashStats struct {
	kills, runs, roots, midPurge, leasesLeft, convergeRuns, strayTemps atomic.Int64
}

func crashSuite(t *testing.T, cfg crashConfig) {
	base := baseSeed(t)
	var st crashStats
	w := calibrate(t, cfg, base)
	t.Logf("calibrated full pass: %v", w)
	chains := 0
	for planned := 0; planned < cfg.kills; chains++ {
		seed := base + uint64(chains)
		n := min(1+newRand(seed).IntN(5), cfg.kills-planned)
		planned += n
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			crashChain(t, cfg, seed, n, w, &st)
		})
	}
	t.Cleanup(func() {
		t.Logf("%d kills (%d runs) over %d chains, %d roots: %d left a table partly purged, %d left leases; %d converging passes; %d stray temp files",
			st.kills.Load(), st.runs.Load(), chains, st.roots.Load(), st.midPurge.Load(), st.leasesLeft.Load(), st.convergeRuns.Load(), st.strayTemps.Load())
		if !t.Failed() {
			require.GreaterOrEqual(t, st.kills.Load(), int64(cfg.kills), "kill points")
			if cfg.kills >= 20 {
				require.Positive(t, st.midPurge.Load(), "no kill landed in the middle of a purge: the kill points test nothing")
			}
		}
	})
}

// window is how long the calibrated pass ran: wall time from its first log
// line to its exit (local) or its request count (S3).
type window struct {
	work     time.Duration
	requests int64
}

func (w window) String() string {
	return fmt.Sprintf("%s of work, %d requests", w.work.Round(time.Millisecond), w.requests)
}

// calibrate runs full passes on fresh roots to size the kill window.
func calibrate(t *testing.T, cfg crashConfig, seed uint64) window {
	var w window
	for i := range 2 {
		b := cfg.newRoot(t)
		f := newFixture(newRand(seed+uint64(1_000_000+i)), crashMix, cfg.files)
		f.write(t, b)
		var px *proxy
		endpoint := ""
		if cfg.proxied {
			px = b.proxy(t, seed)
			endpoint = px.URL()
		}
		var started time.Time
		r := reaperWith(t, append(purgeArgs(cfg.leaseTTL, cfg.skew), b.rootArgs(endpoint)...), &killer{line: func(line string, _ func()) {
			if started.IsZero() && strings.Contains(line, `msg="pass started"`) {
				started = time.Now()
			}
		}})
		require.Equal(t, 1, r.code, "calibration pass (the invalid marker and the link table fail it):\n%s", r)
		require.False(t, started.IsZero(), "no 'pass started' log line:\n%s", r)
		// The shorter of the two: a kill point past the end of the work
		// is a run that finished first, and tests nothing.
		if work := time.Since(started); w.work == 0 || work < w.work {
			w.work = work
		}
		if px != nil && (w.requests == 0 || px.requests.Load() < w.requests) {
			w.requests = px.requests.Load()
		}
	}
	return w
}

// crashChain makes n kills: runs on one root, each with a kill point drawn
// from the seed, checked after each; when the root has nothing left to
// purge it converges and a fresh root continues the chain.
func crashChain(t *testing.T, cfg crashConfig, seed uint64, n int, w window, st *crashStats) {
	rng := newRand(seed)
	kills := 0
	// full is the chain's estimate of a whole pass on a fresh root. The
	// calibration ran while the package's other suites were starting and
	// can be several times too long later on; a run on a fresh root that
	// finishes before its kill point is a better measurement, so later
	// roots draw from it instead of missing again and again.
	full := w
	for root := 0; kills < n; root++ {
		if root > 5*n {
			t.Fatalf("seed %d: %d kills in %d roots: the kill points never land (window %v)", seed, kills, root, w)
		}
		st.roots.Add(1)
		b := cfg.newRoot(t)
		f := newFixture(rng, crashMix, cfg.files)
		f.write(t, b)
		var px *proxy
		endpoint := ""
		if cfg.proxied {
			px = b.proxy(t, seed+uint64(root))
			endpoint = px.URL()
		}
		args := append(purgeArgs(cfg.leaseTTL, cfg.skew), b.rootArgs(endpoint)...)
		var notes []string
		win := full
		for attempt := 0; kills < n && attempt < 3*n; attempt++ {
			// Let the store's clock pass the last victim's leases'
			// takeover time first, so this run takes them over and carries
			// on its purges instead of skipping them.
			waitTakeover(t, b, cfg.skew, fmt.Sprintf("seed %d, root %d: wait for the leases' takeover time", seed, root))
			var r result
			var point string
			var work time.Duration
			if cfg.proxied {
				r, point, win.requests = killAtRequest(t, px, args, rng, win.requests)
			} else {
				r, point, work = killAfterDelay(t, args, rng, win.work)
			}
			st.runs.Add(1)
			if !r.killed {
				// It finished first: later runs have less to do, so
				// draw their kill points from what this one took.
				win.work = max(work, time.Millisecond)
				if attempt == 0 {
					full = win
				}
				notes = append(notes, point+" (finished first)")
			} else {
				kills++
				st.kills.Add(1)
				notes = append(notes, point)
			}
			where := fmt.Sprintf("seed %d, root %d, run %d (%s)", seed, root, attempt+1, point)
			snap := take(t, b)
			checkSafe(t, f, snap, where)
			for _, tb := range f.tables {
				if s := stateOf(tb, snap); tb.kind.purgeable() && s.partial() {
					st.midPurge.Add(1)
					break
				}
			}
			if len(leases(t, b)) > 0 {
				st.leasesLeft.Add(1)
			}
			if done, _ := purgedAll(f, snap); done {
				break
			}
		}
		temps := strayTemps(t, b)
		for _, p := range temps {
			// Lease and marker writes only: never inside a table, where
			// LanceDB would find them.
			require.NotContains(t, p, "/", "seed %d: temp file %s left inside a directory", seed, p)
		}
		st.strayTemps.Add(int64(len(temps)))
		if px != nil {
			px.setHook(nil)
		}
		_, runs := converge(t, b, f, args, cfg.skew, fmt.Sprintf("seed %d, root %d after [%s]", seed, root, strings.Join(notes, "; ")))
		st.convergeRuns.Add(int64(runs))
	}
}

// killAfterDelay SIGKILLs the run a random time (up to window) after its
// first log line. It returns the run, the kill point and how long the run
// worked after that line.
func killAfterDelay(t *testing.T, args []string, rng *rand.Rand, window time.Duration) (result, string, time.Duration) {
	delay := time.Duration(rng.Int64N(int64(window) + 1))
	var timer *time.Timer
	var started time.Time
	var mu sync.Mutex
	r := reaperWith(t, args, &killer{line: func(line string, kill func()) {
		mu.Lock()
		defer mu.Unlock()
		if timer == nil && strings.Contains(line, `msg="pass started"`) {
			started = time.Now()
			timer = time.AfterFunc(delay, kill) // the kill point itself
		}
	}})
	mu.Lock()
	defer mu.Unlock()
	var work time.Duration
	if timer != nil {
		timer.Stop()
		work = time.Since(started)
	}
	return r, fmt.Sprintf("kill %dµs after pass start", delay.Microseconds()), work
}

// killAtRequest SIGKILLs the run at its k-th store request: before the proxy
// forwards it, or after the server answered it. Requests after the k-th
// (still in flight from the dying process) are dropped.
//
// It returns the run, the kill point, and the window for the next run: the
// request count of this run when it finished before its kill point.
func killAtRequest(t *testing.T, px *proxy, args []string, rng *rand.Rand, total int64) (result, string, int64) {
	k := 1 + rng.Int64N(total+total/8+1)
	landed := rng.IntN(2) == 1
	var cmdKill atomic.Pointer[func()]
	px.setHook(func(n int64, _ *http.Request) (hookAction, func()) {
		switch {
		case n < k:
			return hookPass, nil
		case n == k && landed:
			return hookForward, func() {
				if kill := cmdKill.Load(); kill != nil {
					(*kill)()
				}
			}
		default:
			if kill := cmdKill.Load(); kill != nil {
				(*kill)()
			}
			return hookDrop, nil
		}
	})
	r := reaperWith(t, args, &killer{start: func(kill func()) { cmdKill.Store(&kill) }})
	seen := px.requests.Load()
	px.setHook(nil)
	mode := "before forwarding"
	if landed {
		mode = "after the server answered"
	}
	if !r.killed {
		total = max(seen, 1)
	}
	return r, fmt.Sprintf("kill at request %d %s", k, mode), total
}
