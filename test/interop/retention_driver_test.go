package interop

import (
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/nodetest"
)

// retentionDriver is one js/retention.mjs server: requests and answers are
// JSON lines, so that the oracle pays Node's start-up once.
type retentionDriver struct {
	p    *nodetest.Process
	uri  string
	opts map[string]string
}

func startRetentionDriver(t *testing.T, node string, b backend, env ...string) *retentionDriver {
	t.Helper()
	return &retentionDriver{p: nodetest.StartEnv(t, node, jsScript(t, "retention.mjs"), env...), uri: b.uri(), opts: b.lanceOptions()}
}

// call sends one request and decodes its answer into out.
func (d *retentionDriver) call(t *testing.T, cmd string, tables any, out any) {
	t.Helper()
	start := time.Now()
	if err := d.p.Call(cmd, map[string]any{"cmd": cmd, "uri": d.uri, "storageOptions": d.opts, "tables": tables}, out); err != nil {
		t.Fatal(err)
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
	Name string `json:"name"`
	// Namespace is the table's LanceDB namespace (none: a root table).
	Namespace        []string `json:"namespace,omitempty"`
	CutoffMs         int64    `json:"cutoff_ms"`
	DeleteUnverified bool     `json:"delete_unverified"`
}

type cleanupResult struct {
	Name           string `json:"name"`
	VersionsBefore int    `json:"versions_before"`
	VersionsAfter  int    `json:"versions_after"`
	// BytesRemoved and VersionsRemoved are what the client reports.
	BytesRemoved    int64  `json:"bytes_removed"`
	VersionsRemoved int    `json:"versions_removed"`
	Refused         string `json:"refused"`
}

type verifiedTable struct {
	Name     string `json:"name"`
	Versions []struct {
		Version uint64 `json:"version"`
		Rows    int64  `json:"rows"`
		Error   string `json:"error"`
	} `json:"versions"`
	// Branches are each branch's newest version.
	Branches []struct {
		Name  string `json:"name"`
		Rows  int64  `json:"rows"`
		Error string `json:"error"`
	} `json:"branches"`
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
	specs := make([]map[string]any, len(names))
	for i, n := range names {
		specs[i] = map[string]any{"name": n}
	}
	return d.verifySpecs(t, specs)
}

// verifySpecs is verify of tables given as specs ({"name", "namespace"}).
func (d *retentionDriver) verifySpecs(t *testing.T, specs []map[string]any) []verifiedTable {
	var out struct {
		Tables []verifiedTable `json:"tables"`
	}
	d.call(t, "verify", specs, &out)
	return out.Tables
}
