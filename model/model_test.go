// Package model holds the spin models of reaper's safety protocol
// (reaper.pml, docs/PROTOCOL.md) and of version retention's record
// (retain.pml, docs/RETENTION.md), and the tests that check them.
package model

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Each spin run must finish well inside this; it guards against a hang.
const runTimeout = 10 * time.Minute

var (
	errorsRe = regexp.MustCompile(`errors: (\d+)`)
	statesRe = regexp.MustCompile(`(\d+) states, stored`)
	depthRe  = regexp.MustCompile(`depth reached (\d+)`)
)

// requireTools skips the test, or fails it when REAPER_REQUIRE_SPIN=1, if spin
// or gcc is missing.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " is not on PATH: run scripts/install-spin.sh to install the spin model checker"
			if os.Getenv("REAPER_REQUIRE_SPIN") == "1" {
				t.Fatal(msg + " (REAPER_REQUIRE_SPIN=1)")
			}
			t.Skip(msg)
		}
	}
}

type verification struct {
	dir     string        // the run's directory: the model, pan, the trail
	output  string        // pan's output
	errors  int           // pan's error count
	states  int64         // states stored
	elapsed time.Duration // spin, gcc and pan together
}

// run runs name with args in dir and returns its combined output.
func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// verify generates, builds and runs the verifier for model (reaper.pml or
// retain.pml) with the given -D defines, in a copy of the model in a
// temporary directory:
//
//	spin -a [defines] model
//	gcc -O2 -DSAFETY -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c
//	./pan -m100000
func verify(t *testing.T, model string, defines ...string) verification {
	t.Helper()
	src, err := os.ReadFile(model)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, model), src, 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	start := time.Now()

	spinArgs := append(append([]string{"-a"}, defines...), model)
	out, err := run(ctx, dir, "spin", spinArgs...)
	require.NoError(t, err, "spin %s:\n%s", strings.Join(spinArgs, " "), out)

	gccArgs := []string{"-O2", "-DSAFETY", "-DCOLLAPSE", "-DMEMLIM=4096", "-o", "pan", "pan.c"}
	out, err = run(ctx, dir, "gcc", gccArgs...)
	require.NoError(t, err, "gcc %s:\n%s", strings.Join(gccArgs, " "), out)

	out, err = run(ctx, dir, "./pan", "-m100000")
	require.NoError(t, ctx.Err(), "pan did not finish within %v", runTimeout)
	m := errorsRe.FindStringSubmatch(out)
	require.NotNil(t, m, "pan printed no error count (%v):\n%s", err, out)
	v := verification{dir: dir, output: out, elapsed: time.Since(start)}
	v.errors, err = strconv.Atoi(m[1])
	require.NoError(t, err)
	if m := statesRe.FindStringSubmatch(out); m != nil {
		v.states, _ = strconv.ParseInt(m[1], 10, 64)
	}
	label := strings.Join(append([]string{model}, defines...), " ")
	if len(defines) == 0 {
		label += " (defaults)"
	}
	depth := "?"
	if m := depthRe.FindStringSubmatch(out); m != nil {
		depth = m[1]
	}
	t.Logf("spin %s: %d states stored, depth %s, errors %d, %v",
		label, v.states, depth, v.errors, v.elapsed.Round(time.Millisecond))
	require.NotContains(t, out, "max search depth too small", "raise pan's -m:\n%s", out)
	return v
}

// TestModelHolds: with the protocol's parameters (reaper.pml's defaults) a
// full search finds no assertion violation and no invalid end state.
func TestModelHolds(t *testing.T) {
	t.Parallel()
	requireTools(t)
	v := verify(t, "reaper.pml")
	require.Equal(t, 0, v.errors, "the model of docs/PROTOCOL.md found a violation:\n%s", v.output)
	require.Contains(t, v.output, "assertion violations\t+", "assertions were not checked:\n%s", v.output)
	require.Greater(t, v.states, int64(100000), "suspiciously small state space:\n%s", v.output)
}

// TestModelFindsCounterexampleWithoutMargin: with no takeover margin (m = 0,
// skew = 0) spin finds a holder's request landing after a takeover: the
// exclusion property (p1_exclusion) fails, and the trail replays to it.
func TestModelFindsCounterexampleWithoutMargin(t *testing.T) {
	t.Parallel()
	requireTools(t)
	defines := []string{"-DMARGIN=0", "-DSKEW=0"}
	v := verify(t, "reaper.pml", defines...)
	require.Greater(t, v.errors, 0, "no violation found without a margin:\n%s", v.output)
	require.Regexp(t, `assertion violated .*p1_exclusion`, v.output)

	trail := replay(t, v, "reaper.pml", "p1_exclusion", defines...)
	t.Logf("the trail's events:\n%s", summarizeTrail(trail))
}

// replay replays the trail pan left in v.dir (spin -t -p [defines] model)
// and requires it to end in the assertion named assertion.
func replay(t *testing.T, v verification, model, assertion string, defines ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	args := append(append([]string{"-t", "-p"}, defines...), model)
	trail, err := run(ctx, v.dir, "spin", args...)
	require.NoError(t, err, "spin %s:\n%s", strings.Join(args, " "), trail)
	require.Contains(t, trail, "Error: assertion violated", "the trail replays to no violation (spin %s):\n%s", strings.Join(args, " "), trail)
	require.Regexp(t, `text of failed assertion: assert\(.*`+assertion, trail, "the trail ends in another assertion")
	t.Logf("replayed the trail: spin %s", strings.Join(args, " "))
	return trail
}

// trailEvents names the statements of a `spin -t -p` replay worth reading.
var trailEvents = []struct{ stmt, event string }{
	{"[lk = 1]", "lease written (create, takeover or renewal)"},
	{"[lk = 0]", "lease released"},
	{"[t0 = S]", "fence passed: request sent"},
	{"[cm = 1]", "commit written"},
	{"[cm = 0]", "commit deleted"},
	{"[mk = 0]", "marker deleted"},
	{"[mk = 1]", "marker written"},
	{"[tbl = ", "data batch deleted"},
	{"[hold = 1]", "hold placed"},
	{"[pause = 1]", "PAUSE placed"},
}

var procRe = regexp.MustCompile(`proc +(\d+) \((\w+):`)

// summarizeTrail reduces a replayed trail to its events, each with the
// store time S at which it happened.
func summarizeTrail(trail string) string {
	var b strings.Builder
	s := 0
	for _, line := range strings.Split(trail, "\n") {
		if strings.Contains(line, "[S = (S+1)]") {
			s++
			continue
		}
		if strings.Contains(line, "Error: assertion violated") || strings.Contains(line, "text of failed assertion") {
			fmt.Fprintf(&b, "S=%d %s\n", s, strings.TrimSpace(line))
			continue
		}
		m := procRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, ev := range trailEvents {
			if strings.Contains(line, ev.stmt) {
				fmt.Fprintf(&b, "S=%d %s (pid %s): %s\n", s, m[2], m[1], ev.event)
				break
			}
		}
	}
	return b.String()
}
