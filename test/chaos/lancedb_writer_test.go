package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// The retention chaos suite drives the real LanceDB client, the npm
// package test/interop installs (make interop-deps, part of make test):
// test/interop/js/retention_writer.mjs, whose imports Node resolves from
// test/interop/node_modules.

// interopScript is the writer script, as an absolute path. It is stat'ed so
// that go test's result cache (which tracks the files a test opens or
// stats, not those node reads) runs the suite again when it changes.
func interopScript(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "interop", "js", name))
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("interop script %s: %v", name, err)
	}
	return p
}

// requireLanceDB returns node's path, or skips the test when node or the
// client is missing, which make test (REAPER_REQUIRE_S3=1) and CI=true turn
// into a failure, as the interop suite does.
func requireLanceDB(t testing.TB) string {
	t.Helper()
	problem := ""
	node, err := exec.LookPath("node")
	if err != nil {
		problem = "node is not installed (need Node 22 or newer; 20 works)"
	} else if _, err := os.Stat(filepath.Join("..", "interop", "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		problem = "the LanceDB client is not installed in test/interop/node_modules"
	}
	switch {
	case problem == "":
		return node
	case os.Getenv(objstoretest.EnvRequireS3) == "1" || os.Getenv("CI") == "true":
		t.Fatalf("%s (%s=1 or CI=true forbids skipping); run `make interop-deps`", problem, objstoretest.EnvRequireS3)
	default:
		t.Skipf("%s; run `make interop-deps`", problem)
	}
	return ""
}

// lanceWriter is one retention_writer.mjs process: requests and answers are
// JSON lines, so the suite pays Node's start-up once.
type lanceWriter struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	uri    string
	mu     sync.Mutex // one request at a time
}

// lockedBuffer is a bytes.Buffer safe for the process's stderr copier and
// the test reading it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startLanceWriter(t testing.TB, uri string) *lanceWriter {
	t.Helper()
	node := requireLanceDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, interopScript(t, "retention_writer.mjs"))
	w := &lanceWriter{cmd: cmd, stderr: &lockedBuffer{}, uri: uri}
	cmd.Stderr = w.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start retention_writer.mjs: %v", err)
	}
	w.in, w.out = in, bufio.NewReaderSize(out, 1<<20)
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
	return w
}

// call sends one request for the tables of uri and decodes its answer into
// out. It returns an error rather than failing, so that it can run on a
// goroutine beside the reaper processes.
func (w *lanceWriter) call(uri, cmd string, tables any, out any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	req, err := json.Marshal(map[string]any{"cmd": cmd, "uri": uri, "tables": tables})
	if err != nil {
		return err
	}
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		return &writerError{cmd: cmd, err: err, stderr: w.stderr.String()}
	}
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		return &writerError{cmd: cmd, err: err, stderr: w.stderr.String()}
	}
	if err := json.Unmarshal(line, out); err != nil {
		return &writerError{cmd: cmd, err: err, stderr: string(line)}
	}
	return nil
}

type writerError struct {
	cmd    string
	err    error
	stderr string
}

func (e *writerError) Error() string {
	return "retention_writer.mjs " + e.cmd + ": " + e.err.Error() + "\nstderr:\n" + e.stderr
}

// versionRecord is what the writer read from a version it made, right
// after making it.
type versionRecord struct {
	Version uint64 `json:"version"`
	Rows    int64  `json:"rows"`
	Digest  string `json:"digest"`
	StartMs int64  `json:"start_ms"`
	EndMs   int64  `json:"end_ms"`
}

// writerOp is one operation of retention_writer.mjs (see its header).
type writerOp struct {
	Op       string `json:"op"`
	From     int    `json:"from,omitempty"`
	To       int    `json:"to,omitempty"`
	Where    string `json:"where,omitempty"`
	Value    string `json:"value,omitempty"`
	Column   string `json:"column,omitempty"`
	Type     string `json:"type,omitempty"`
	Back     int    `json:"back,omitempty"`
	MaxAgeMs int64  `json:"max_age_ms,omitempty"`
}

type opResult struct {
	Op      string `json:"op"`
	Error   string `json:"error"`
	Skipped bool   `json:"skipped"`
}

// writeResult is a create's or a write's answer for one table.
type writeResult struct {
	Name     string          `json:"name"`
	Versions []versionRecord `json:"versions"`
	Ops      []opResult      `json:"ops"`
}

type writeSpec struct {
	Name string     `json:"name"`
	Kind string     `json:"kind"`
	Rows int        `json:"rows,omitempty"`
	Ops  []writerOp `json:"ops,omitempty"`
}

func (w *lanceWriter) write(cmd string, specs []writeSpec) ([]writeResult, error) {
	var out struct {
		Tables []writeResult `json:"tables"`
	}
	err := w.call(w.uri, cmd, specs, &out)
	return out.Tables, err
}

// listedVersion is one version the client lists, as it reads it now.
type listedVersion struct {
	Version     uint64 `json:"version"`
	TimestampMs int64  `json:"timestamp_ms"`
	Rows        int64  `json:"rows"`
	Digest      string `json:"digest"`
	Error       string `json:"error"`
}

type verifiedTable struct {
	Name     string          `json:"name"`
	Versions []listedVersion `json:"versions"`
}

func (w *lanceWriter) verify(uri string, names []string) ([]verifiedTable, error) {
	specs := make([]map[string]string, len(names))
	for i, n := range names {
		specs[i] = map[string]string{"name": n}
	}
	var out struct {
		Tables []verifiedTable `json:"tables"`
	}
	err := w.call(uri, "verify", specs, &out)
	return out.Tables, err
}

type lanceCleanup struct {
	Name           string `json:"name"`
	VersionsBefore int    `json:"versions_before"`
	VersionsAfter  int    `json:"versions_after"`
	Error          string `json:"error"`
}

// cleanup runs the client's own cleanup, optimize({cleanupOlderThan:
// cutoff, deleteUnverified: false}), on the tables of uri.
func (w *lanceWriter) cleanup(uri string, names []string, cutoff time.Time) ([]lanceCleanup, error) {
	specs := make([]map[string]any, len(names))
	for i, n := range names {
		specs[i] = map[string]any{"name": n, "cutoff_ms": cutoff.UnixMilli()}
	}
	var out struct {
		Tables []lanceCleanup `json:"tables"`
	}
	err := w.call(uri, "cleanup", specs, &out)
	return out.Tables, err
}
