package objstoretest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file owns the life of the test servers (versitygw, fake-gcs-server,
// Azurite): found once (an environment variable, <repo>/.tools/bin, PATH),
// started once per test binary on a free 127.0.0.1 port, shared by every
// test, skipped without the binary unless required (then a failure), and
// stopped by Main. Each server's file says only what is its own: the
// command line, the readiness probe, the bucket per test.

// shared is one server shared by every test of the process.
type shared[P any] struct {
	what       string // "S3 test server", in messages
	envRequire string // EnvRequireS3…: a missing server fails instead of skipping
	start      func() (p P, skip string, err error)
	stop       func(P)

	once    sync.Once
	mu      sync.Mutex // guards the fields below against close
	p       P
	skip    string
	err     error
	started bool // start ran and gave a server
	ended   bool
}

// get starts the server on first use and returns it, or ends t: a skip
// without the server, a failure when one is required or it failed to
// start.
func (s *shared[P]) get(t testing.TB) P {
	t.Helper()
	s.once.Do(func() {
		p, skip, err := s.start()
		s.mu.Lock()
		s.p, s.skip, s.err = p, skip, err
		s.started = err == nil && skip == ""
		s.mu.Unlock()
	})
	s.mu.Lock()
	p, skip, err, ended := s.p, s.skip, s.err, s.ended
	s.mu.Unlock()
	switch {
	case ended:
		t.Fatalf("objstoretest: %s already stopped", s.what)
	case err != nil:
		t.Fatalf("objstoretest: start %s: %v", s.what, err)
	case skip != "" && required(s.envRequire):
		t.Fatalf("objstoretest: no %s (%s=1 or CI=true forbids skipping): %s", s.what, s.envRequire, skip)
	case skip != "":
		t.Skipf("objstoretest: no %s: %s", s.what, skip)
	}
	return p
}

// close stops the server if it was started; later gets fail.
func (s *shared[P]) close() {
	s.once.Do(func() {}) // a later get must not start a new server
	s.mu.Lock()
	p, started := s.p, s.started && !s.ended
	s.ended = true
	var zero P
	s.p = zero
	s.mu.Unlock()
	if started && s.stop != nil {
		s.stop(p)
	}
}

func required(env string) bool {
	return os.Getenv(env) == "1" || os.Getenv("CI") == "true"
}

// Main runs the tests, then stops the S3, GCS, Azure and DynamoDB test
// servers: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopS3()
	StopGCS()
	StopAzure()
	StopDDB()
	os.Exit(code)
}

// findTool looks for a test server's binary in $env, <repo>/.tools/bin,
// then PATH; why says how to get it when it is nowhere. Each way stats the
// binary, and go test's result cache keys on the files a test stats: a
// reinstalled server (a new version in .tools/bin) re-runs the suites that
// used it.
func findTool(env, name, install string) (bin, why string) {
	if b := os.Getenv(env); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Sprintf("%s=%s: %v", env, b, err)
		}
		return b, ""
	}
	if root, err := repoRoot(); err == nil {
		b := filepath.Join(root, ".tools", "bin", name)
		if _, err := os.Stat(b); err == nil {
			return b, ""
		}
	}
	if b, err := exec.LookPath(name); err == nil {
		return b, ""
	}
	return "", fmt.Sprintf("%s not found in $%s, <repo>/.tools/bin or PATH; %s", name, env, install)
}

// repoRoot walks up from the working directory to the folder with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

// launchRetrying runs launch up to three times: the free port it probed
// can be taken between the probe and the server's bind.
func launchRetrying[P any](launch func() (P, error)) (P, error) {
	var p P
	var err error
	for range 3 {
		if p, err = launch(); err == nil {
			return p, nil
		}
	}
	return p, err
}

// proc is one running test server process.
type proc struct {
	addr    string // host:port it listens on
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	dataDir string        // removed by stop; "" for none
	out     strings.Builder
}

// startProc starts bin with args, in dataDir when not "" (its working
// directory, removed by stop; the caller made it), and waits until ready
// answers true, failing if the process exits first or timeout passes.
func startProc(name, bin, addr string, args, env []string, dataDir string, timeout time.Duration, ready func(*proc) bool) (*proc, error) {
	p := &proc{addr: addr, exited: make(chan struct{}), dataDir: dataDir}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = p.dataDir
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		p.removeData()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(timeout, ready); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s on %s: %w; output: %s", name, addr, err, strings.TrimSpace(p.out.String()))
	}
	return p, nil
}

// waitReady polls ready until it answers true, the process dies, or the
// timeout passes.
func (p *proc) waitReady(timeout time.Duration, ready func(*proc) bool) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(p) {
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("exited before listening")
		case <-deadline:
			return fmt.Errorf("not ready after %v", timeout)
		case <-tick.C:
		}
	}
}

// listening is the readiness probe of a server that is ready once its port
// accepts connections.
func listening(p *proc) bool {
	conn, err := net.DialTimeout("tcp", p.addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// stop kills the process (test data is throwaway, so no graceful
// shutdown) and removes its data directory. Safe on nil.
func (p *proc) stop() {
	if p == nil {
		return
	}
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.removeData()
}

func (p *proc) removeData() {
	if p.dataDir != "" {
		_ = os.RemoveAll(p.dataDir)
	}
}

// tempDataDir makes a fresh data directory for one server process.
func tempDataDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "reaper-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("make data dir: %w", err)
	}
	return dir, nil
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
