package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runTimeout bounds one reaper process; a pass over a test root takes well
// under a second, retries under faults a few seconds.
const runTimeout = 2 * time.Minute

// result is one finished reaper process.
type result struct {
	args   []string
	code   int  // exit status; -1 when killed
	killed bool // ended by our SIGKILL
	stdout []byte
	stderr []byte
	dur    time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("reaper %s: exit %d (killed %t) after %s\nstdout:\n%s\nstderr (tail):\n%s",
		strings.Join(r.args, " "), r.code, r.killed, r.dur.Round(time.Millisecond), r.stdout, tail(r.stderr, 30))
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// purgeArgs are the flags every suite's purge shares: due markers have a
// 1ms TTL, most tables of a fixture are due at once, and leases are short so
// a killed run's leases expire quickly.
func purgeArgs(leaseTTL time.Duration, extra ...string) []string {
	args := []string{"purge", "-o", "json", "--log-format", "text", "--log-level", "info",
		"--allow-short-ttl",
		"--set", "safety.blast_radius_max_percent=0",
		"--set", "defaults.lease_ttl=" + leaseTTL.String(),
	}
	return append(args, extra...)
}

// reaper runs the binary to completion.
func reaper(t testing.TB, args ...string) result {
	t.Helper()
	return reaperWith(t, args, nil)
}

// killer decides when to SIGKILL a running process. start is called once the
// process runs; line is called for every stderr line.
type killer struct {
	start func(kill func())
	line  func(line string, kill func())
}

// reaperWith runs the binary; k, when set, may kill it.
func reaperWith(t testing.TB, args []string, k *killer) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, reaperBin(t), args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	begin := time.Now()
	require.NoError(t, cmd.Start())

	var once sync.Once
	killed := false
	kill := func() {
		once.Do(func() {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
		})
	}
	if k != nil && k.start != nil {
		k.start(kill)
	}
	var stderr bytes.Buffer
	sc := bufio.NewScanner(errPipe)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		stderr.Write(sc.Bytes())
		stderr.WriteByte('\n')
		if k != nil && k.line != nil {
			k.line(sc.Text(), kill)
		}
	}
	_, _ = io.Copy(&stderr, errPipe)
	werr := cmd.Wait()
	once.Do(func() {}) // no kill after Wait
	r := result{args: args, stdout: stdout.Bytes(), stderr: stderr.Bytes(), dur: time.Since(begin), killed: killed}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run reaper %v: %v", args, werr)
	}
	if ctx.Err() != nil {
		t.Fatalf("reaper %v did not finish within %s:\n%s", args, runTimeout, r)
	}
	if r.code == 66 || bytes.Contains(r.stderr, []byte("WARNING: DATA RACE")) {
		t.Fatalf("data race inside reaper:\n%s", r)
	}
	if bytes.Contains(r.stderr, []byte("panic:")) {
		t.Fatalf("reaper panicked:\n%s", r)
	}
	return r
}

// purgeReport is `reaper purge -o json`.
type purgeReport struct {
	Purged []struct {
		Root    string `json:"root"`
		Name    string `json:"name"`
		Objects int64  `json:"objects"`
		Bytes   int64  `json:"bytes"`
	} `json:"purged"`
	Skipped []struct {
		Root   string `json:"root"`
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Failed []struct {
		Root  string `json:"root"`
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"failed"`
}

// outcomes maps table name to "purged", "skipped: <reason>" or
// "failed: <error>".
func (p purgeReport) outcomes() map[string]string {
	out := map[string]string{}
	for _, e := range p.Purged {
		out[e.Name] = "purged"
	}
	for _, e := range p.Skipped {
		out[e.Name] = "skipped: " + e.Reason
	}
	for _, e := range p.Failed {
		out[e.Name] = "failed: " + e.Error
	}
	return out
}

// report decodes a finished purge's JSON (a killed one has none).
func report(t testing.TB, r result) purgeReport {
	t.Helper()
	var p purgeReport
	require.NoError(t, json.Unmarshal(r.stdout, &p), "purge output is not the JSON report:\n%s", r)
	return p
}
