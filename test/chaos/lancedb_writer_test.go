package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/nodetest"
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
	return nodetest.Script(t, filepath.Join("..", "interop", "js"), name)
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
	p   *nodetest.Process
	uri string
	// opts are the storage options the client reaches uri with (nil for a
	// local root).
	opts map[string]string
}

func startLanceWriter(t testing.TB, uri string) *lanceWriter {
	t.Helper()
	return startLanceWriterWith(t, uri, nil)
}

// startLanceWriterWith starts a writer of the root at uri, which the client
// reaches with the storage options opts (a server's: S3, Azure, s3+ddb).
func startLanceWriterWith(t testing.TB, uri string, opts map[string]string) *lanceWriter {
	t.Helper()
	return &lanceWriter{p: nodetest.Start(t, requireLanceDB(t), interopScript(t, "retention_writer.mjs")), uri: uri, opts: opts}
}

// call sends one request for the tables of uri and decodes its answer into
// out. It returns an error rather than failing, so that it can run on a
// goroutine beside the reaper processes. The writer's storage options go
// with a request for its own root; another uri (a local copy) has none.
func (w *lanceWriter) call(uri, cmd string, tables any, out any) error {
	req := map[string]any{"cmd": cmd, "uri": uri, "tables": tables}
	if uri == w.uri && w.opts != nil {
		req["storageOptions"] = w.opts
	}
	return w.p.Call(cmd, req, out)
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

// drop drops the tables with LanceDB's own dropTable: their directories go
// (on s3+ddb their commit rows too), and a create of the same name makes a
// new table.
func (w *lanceWriter) drop(names []string) error {
	specs := make([]map[string]string, len(names))
	for i, n := range names {
		specs[i] = map[string]string{"name": n}
	}
	var out struct {
		Tables []writeResult `json:"tables"`
	}
	return w.call(w.uri, "drop", specs, &out)
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
