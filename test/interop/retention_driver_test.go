package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// retentionDriver is one js/retention.mjs server: requests and answers are
// JSON lines, so that the oracle pays Node's start-up once.
type retentionDriver struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
	uri    string
	opts   map[string]string
}

// syncBuffer is a bytes.Buffer safe for the process's stderr copier and the
// test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startRetentionDriver(t *testing.T, node string, b backend) *retentionDriver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, jsScript(t, "retention.mjs"))
	d := &retentionDriver{cmd: cmd, stderr: &syncBuffer{}, uri: b.uri(), opts: b.lanceOptions()}
	cmd.Stderr = d.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start retention.mjs: %v", err)
	}
	d.in, d.out = in, bufio.NewReaderSize(out, 1<<20)
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
	return d
}

// call sends one request and decodes its answer into out.
func (d *retentionDriver) call(t *testing.T, cmd string, tables any, out any) {
	t.Helper()
	req, err := json.Marshal(map[string]any{"cmd": cmd, "uri": d.uri, "storageOptions": d.opts, "tables": tables})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := d.in.Write(append(req, '\n')); err != nil {
		t.Fatalf("retention.mjs %s: write: %v\nstderr:\n%s", cmd, err, d.stderr.String())
	}
	line, err := d.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("retention.mjs %s: %v\nstderr:\n%s", cmd, err, d.stderr.String())
	}
	if err := json.Unmarshal(line, out); err != nil {
		t.Fatalf("retention.mjs %s answer: %v\n%s", cmd, err, line)
	}
	t.Logf("retention.mjs %s: %v", cmd, time.Since(start).Round(time.Millisecond))
}

// builtTable is the build command's answer for one table.
type builtTable struct {
	Name     string         `json:"name"`
	Versions []builtVersion `json:"versions"`
	Calls    int            `json:"optimize_calls"`
}

type builtVersion struct {
	Version     uint64 `json:"version"`
	TimestampMs int64  `json:"timestamp_ms"`
	Rows        int64  `json:"rows"`
}

type cleanupSpec struct {
	Name             string `json:"name"`
	CutoffMs         int64  `json:"cutoff_ms"`
	DeleteUnverified bool   `json:"delete_unverified"`
}

type cleanupResult struct {
	Name           string `json:"name"`
	VersionsBefore int    `json:"versions_before"`
	VersionsAfter  int    `json:"versions_after"`
	Refused        string `json:"refused"`
}

type verifiedTable struct {
	Name     string `json:"name"`
	Versions []struct {
		Version uint64 `json:"version"`
		Rows    int64  `json:"rows"`
		Error   string `json:"error"`
	} `json:"versions"`
}

func (d *retentionDriver) build(t *testing.T, hs []history) []builtTable {
	var out struct {
		Tables []builtTable `json:"tables"`
	}
	d.call(t, "build", hs, &out)
	return out.Tables
}

func (d *retentionDriver) cleanup(t *testing.T, specs []cleanupSpec) []cleanupResult {
	var out struct {
		Tables []cleanupResult `json:"tables"`
	}
	d.call(t, "cleanup", specs, &out)
	return out.Tables
}

func (d *retentionDriver) verify(t *testing.T, names []string) []verifiedTable {
	specs := make([]map[string]string, len(names))
	for i, n := range names {
		specs[i] = map[string]string{"name": n}
	}
	var out struct {
		Tables []verifiedTable `json:"tables"`
	}
	d.call(t, "verify", specs, &out)
	return out.Tables
}
