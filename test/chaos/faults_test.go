package chaos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFaultInjection runs `reaper purge` (the CLI: retries with
// s3.IsTransient, the pacer, metrics) against the real S3 server through the
// fault proxy: 503 SlowDown, 500, 429, connection resets before and after
// the server saw the request, latency, and per-key errors inside 200
// DeleteObjects answers (transient and permanent codes), at a seeded 20% of
// requests. The pass must purge or report every due table, delete nothing
// of any other table, keep the marker of every table it did not finish, and
// a later pass without faults must finish them all.
func TestFaultInjection(t *testing.T) {
	base := baseSeed(t)
	t.Parallel()
	seeds := knob(t, "REAPER_TEST_CHAOS_FAULT_SEEDS", 1, 12)
	rate := floatKnob(t, "REAPER_TEST_CHAOS_FAULT_RATE", 0.2, 0.3)
	passLimit := time.Duration(knob(t, "REAPER_TEST_CHAOS_FAULT_PASS_SECONDS", 45, 600)) * time.Second
	total := map[fault]int64{}
	var mu sync.Mutex
	t.Cleanup(func() { // after the parallel seeds
		if t.Failed() {
			return
		}
		t.Logf("faults injected over %d seeds: %v", seeds, total)
		for _, f := range append(requestFaults, faultKeyError) {
			require.Positive(t, total[f], "fault %q was never injected: the suite did not test it", f)
		}
	})
	for i := range seeds {
		seed := base + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			for f, n := range faultPass(t, seed, rate, passLimit) {
				mu.Lock()
				total[f] += n
				mu.Unlock()
			}
		})
	}
}

// faultLeaseTTL is the lease of the faulty passes. The pacer holds a pass
// under a fifth of failing requests near a few requests a second, renewals
// and the guard's reads before every batch included: a lease of a couple of
// seconds is lost (lease_lost) before most tables commit, and the per-key
// DeleteObjects faults are then never reached. Nothing is killed here, so
// no takeover waits for it.
const faultLeaseTTL = 10 * time.Second

// faultPass runs one seed: a root of 30 tables of every kind, one pass
// under faults, then fault-free passes to convergence. It returns the
// faults injected.
func faultPass(t *testing.T, seed uint64, rate float64, passLimit time.Duration) map[fault]int64 {
	rng := newRand(seed)
	start := time.Now()
	lap := func(what string) {
		t.Logf("seed %d: %s at %s", seed, what, time.Since(start).Round(time.Millisecond))
	}
	b := s3Backend(t, "lance/db")
	f := newFixture(rng, mix{kindDue: 14, kindNotDue: 5, kindLive: 5, kindOrphan: 2, kindInvalid: 1, kindHeld: 1, kindFenced: 2, kindLink: 1}, [2]int{6, 40})
	f.write(t, b)
	lap("fixture written")
	require.Equal(t, f.expected(), take(t, b).withoutDirs(), "fixture written as planned")
	lap("snapshot taken")

	px := newProxy(t, b.srv, seed)
	px.set(faultConfig{
		rates: spread(rate), latencyMax: 40 * time.Millisecond,
		// Mostly transient codes (retried key by key), sometimes a
		// permanent one (the table fails and a later pass finishes it).
		keyErrorRate: rate / 2, keyErrorCodes: []string{"InternalError", "SlowDown", "InternalError", "SlowDown", "InternalError", "AccessDenied"},
	})
	where := fmt.Sprintf("seed %d, pass under %.0f%% faults", seed, 100*rate)
	// The default retry budget (limits.retry_max_elapsed, 2m): the pacer's
	// waits count against it, and a short one fails whole roots at once.
	// Under a fifth of requests failing the pacer holds the pass at a few
	// requests a second, so the pass is bounded (limits.max_pass_duration):
	// what it did not finish it reports as skipped, markers kept.
	args := append(purgeArgs(faultLeaseTTL, shortSkew, "--set", "limits.max_pass_duration="+passLimit.String()), b.rootArgs(px.URL())...)
	r := reaper(t, args...)
	lap(fmt.Sprintf("faulty pass done in %s", r.dur.Round(time.Millisecond)))
	injected := px.injected()
	require.Equal(t, 1, r.code, "%s: an invalid marker always fails the pass (exit 1):\n%s", where, r)
	rep := report(t, r)
	snap := take(t, b)
	checkSafe(t, f, snap, where)
	checkReport(t, f, rep, snap, where, r)
	out := rep.outcomes()
	purged, unfinished := 0, []string{}
	for _, tb := range f.tables {
		if !tb.kind.purgeable() {
			continue
		}
		if out[tb.name] == "purged" {
			purged++
		} else {
			unfinished = append(unfinished, tb.name+" -> "+out[tb.name])
		}
	}
	sort.Strings(unfinished)
	for _, e := range rep.Failed {
		if e.Name == "" {
			t.Logf("%s: root failed: %s", where, e.Error)
		}
	}
	t.Logf("%s: %d requests, faults %v; purged %d, unfinished %d: %s", where, px.requests.Load(), injected,
		purged, len(unfinished), strings.Join(unfinished, "; "))

	px.set(faultConfig{})
	last, runs := converge(t, b, f, append(purgeArgs(faultLeaseTTL, shortSkew), b.rootArgs(px.URL())...), shortSkew, fmt.Sprintf("seed %d", seed))
	failedOnlyInvalid(t, f, last, fmt.Sprintf("seed %d, last fault-free pass", seed))
	lap(fmt.Sprintf("converged after %d fault-free pass(es)", runs))
	return injected
}

// checkReport asserts the JSON report of a pass against what is in the
// store: a table reported purged is gone with its marker; a purgeable table
// not purged is reported failed or skipped and keeps its marker; the others
// are reported for what they are. A root-level failure (the root listing
// gave up) may leave tables unreported, never deleted.
func checkReport(t testing.TB, f *fixture, rep purgeReport, snap snapshot, where string, r result) {
	t.Helper()
	out := rep.outcomes()
	rootFailed := false
	for _, e := range rep.Failed {
		if e.Name == "" {
			rootFailed = true
		}
	}
	for _, tb := range f.tables {
		s := stateOf(tb, snap)
		got, reported := out[tb.name]
		if !reported {
			require.True(t, rootFailed || tb.kind == kindLive, "%s: %s missing from the report\n%s", where, s, r)
			continue
		}
		switch tb.kind {
		case kindDue, kindOrphan:
			if got == "purged" {
				require.True(t, s.gone() && s.marker == markerAbsent, "%s: reported purged but %s", where, s)
			} else {
				require.True(t, strings.HasPrefix(got, "failed: ") || strings.HasPrefix(got, "skipped: "), "%s: %s: %s", where, tb.name, got)
				// Kept with its marker (and its commit once committed:
				// checkSafe); or wholly gone when the marker's delete
				// landed but its answer was lost until the retries gave
				// up (reported failed, finished all the same).
				require.True(t, s.marker == markerOriginal || s.fullyGone() && s.marker == markerAbsent,
					"%s: %s not finished (%s) but its marker is gone", where, s, got)
			}
		case kindInvalid, kindLink:
			require.True(t, strings.HasPrefix(got, "failed: "), "%s: invalid marker or link %s reported %q", where, tb.name, got)
		case kindNotDue:
			require.True(t, strings.HasPrefix(got, "skipped: not due"), "%s: %s reported %q", where, tb.name, got)
		case kindHeld:
			require.True(t, strings.HasPrefix(got, "skipped: held"), "%s: %s reported %q", where, tb.name, got)
		case kindFenced:
			// A conflict; or an I/O failure, or the pass's time limit,
			// before the fence decided.
			require.NotEqual(t, "purged", got, "%s: %s reported %q", where, tb.name, got)
		case kindLive:
			t.Fatalf("%s: live table %s in the report: %q", where, tb.name, got)
		}
	}
}
