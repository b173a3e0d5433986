// Package nodetest runs a Node script of the interop suite as a server of
// JSON lines (one request, one answer), so that a test pays Node's start-up
// and the LanceDB client's loading once. The retention oracle and the
// retention chaos suite drive the real LanceDB client through it. Only
// tests import it (the layering test checks).
package nodetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Process is one running script. Call is safe for concurrent use: requests
// go one at a time.
type Process struct {
	name   string
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	mu     sync.Mutex
}

// Start runs node on script; the test's cleanup closes its input and waits
// for it (killing it after 30 s).
func Start(t testing.TB, node, script string) *Process {
	t.Helper()
	return StartEnv(t, node, script)
}

// StartEnv is Start with env ("KEY=value") added to the test's
// environment: the LanceDB client opens a namespaced table (and a shallow
// clone's source) without the connection's storage options, so a test on
// an S3 endpoint gives them through the environment too, and a parallel
// test cannot set its own (t.Setenv).
func StartEnv(t testing.TB, node, script string, env ...string) *Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, script)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	p := &Process{name: filepath.Base(script), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", p.name, err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	return p
}

// Call sends req as one JSON line and decodes the answer line into out. It
// returns an error naming the script and the request, with the script's
// stderr, rather than failing the test, so that it can run on a goroutine.
func (p *Process) Call(cmd string, req any, out any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return p.fail(cmd, "write", err, p.stderr.String())
	}
	answer, err := p.out.ReadBytes('\n')
	if err != nil {
		return p.fail(cmd, "read", err, p.stderr.String())
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return p.fail(cmd, "answer", err, string(answer))
	}
	return nil
}

func (p *Process) fail(cmd, step string, err error, detail string) error {
	return fmt.Errorf("%s %s: %s: %w\nstderr:\n%s", p.name, cmd, step, err, detail)
}

// lockedBuffer is a bytes.Buffer safe for the process's stderr copier and
// the test reading it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Script is the absolute path of script name in dir. It stats every .mjs
// file of dir, so that go test's result cache (which tracks the files a test
// opens or stats, not those node reads) runs the test again when the script
// or a module it imports changes.
func Script(t testing.TB, dir, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("interop script %s: %v", name, err)
	}
	siblings, err := filepath.Glob(filepath.Join(filepath.Dir(p), "*.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range siblings {
		if _, err := os.Stat(s); err != nil {
			t.Fatalf("interop script %s: %v", s, err)
		}
	}
	return p
}
