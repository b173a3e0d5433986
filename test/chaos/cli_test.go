package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
// 1ms TTL, most tables of a fixture are due at once, and leases are short.
// skew is defaults.skew_allowance: a lease may be taken over once the
// store's clock passes its LastModified + leaseTTL + 1s + skew, so suites
// that kill or stop purges set it small (a killed run's leases are taken
// over about leaseTTL + 1s + skew later; on S3 up to two seconds more, as
// the store's clock is read from versitygw's cached, truncated Date).
func purgeArgs(leaseTTL, skew time.Duration, extra ...string) []string {
	args := []string{"purge", "-o", "json", "--log-format", "text", "--log-level", "info",
		"--allow-short-ttl",
		"--set", "safety.blast_radius_max_percent=0",
		"--set", "defaults.lease_ttl=" + leaseTTL.String(),
		"--set", "defaults.skew_allowance=" + skew.String(),
	}
	return append(args, extra...)
}

// Skew allowances of the suites: small where killed or stopped runs' leases
// must be taken over within a test, the default (5m) where no lease is
// ever taken over and a marker written with the host's clock must not look
// future-dated to a store whose Date trails by a second or two.
const (
	shortSkew   = 100 * time.Millisecond
	defaultSkew = 5 * time.Minute
)

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
	return startReaper(t, args, nil, k).wait(t)
}

// proc is one running reaper process.
type proc struct {
	args   []string
	cmd    *exec.Cmd
	ctx    context.Context
	cancel context.CancelFunc
	begin  time.Time
	end    time.Time // when it was reaped
	done   chan struct{}
	res    result
	werr   error

	mu      sync.Mutex
	killed  bool
	exited  bool
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	scanErr error
}

// startReaper starts the binary with extra environment (KEY=VALUE); k, when
// set, may kill it. Its stderr is read (and passed to k.line) in the
// background; wait collects the result.
func startReaper(t testing.TB, args, env []string, k *killer) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	p := &proc{args: args, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, reaperBin(t), args...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout = &p.stdout
	errPipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	p.begin = time.Now()
	require.NoError(t, p.cmd.Start())
	if k != nil && k.start != nil {
		k.start(p.kill)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.Write(sc.Bytes())
			p.stderr.WriteByte('\n')
			p.mu.Unlock()
			if k != nil && k.line != nil {
				k.line(sc.Text(), p.kill)
			}
		}
		rest, _ := io.ReadAll(errPipe)
		p.mu.Lock()
		p.stderr.Write(rest)
		p.scanErr = sc.Err()
		p.mu.Unlock()
		p.werr = p.cmd.Wait()
		p.mu.Lock()
		p.end = time.Now()
		p.exited = true // no signal after Wait: the pid may be reused
		p.mu.Unlock()
	}()
	return p
}

// kill SIGKILLs the process (once; never after it was reaped).
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed || p.exited {
		return
	}
	p.killed = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
}

// signal sends sig unless the process was reaped; it reports whether it
// was sent.
func (p *proc) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return false
	}
	return p.cmd.Process.Signal(sig) == nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// finished reports whether the process has exited (without waiting).
func (p *proc) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process and checks it neither raced nor panicked.
func (p *proc) wait(t testing.TB) result {
	t.Helper()
	<-p.done
	defer p.cancel()
	p.mu.Lock()
	r := result{args: p.args, stdout: p.stdout.Bytes(), stderr: p.stderr.Bytes(), dur: p.end.Sub(p.begin), killed: p.killed}
	p.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case p.werr == nil:
	case errors.As(p.werr, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run reaper %v: %v", p.args, p.werr)
	}
	if p.ctx.Err() != nil {
		t.Fatalf("reaper %v did not finish within %s:\n%s", p.args, runTimeout, r)
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
		Code  string `json:"code"`
		Error string `json:"error"`
	} `json:"failed"`
	// LedgerErrors are the audit ledger's failed writes: they fail the
	// pass (exit 1) without failing a table.
	LedgerErrors []string `json:"ledger_errors"`
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
