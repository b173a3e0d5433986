package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// op is one operation of js/lancedb.mjs (see the script's header).
type op struct {
	Op    string `json:"op"`
	Name  string `json:"name,omitempty"`
	Kind  string `json:"kind,omitempty"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Where string `json:"where,omitempty"`
	// Column and Type are the index to create.
	Column string `json:"column,omitempty"`
	Type   string `json:"type,omitempty"`
	// Tag and Version name a tag; Branch a branch.
	Tag     string `json:"tag,omitempty"`
	Version int64  `json:"version,omitempty"`
	Branch  string `json:"branch,omitempty"`
}

func opCreate(name, kind string, from, to int) op {
	return op{Op: "create", Name: name, Kind: kind, From: from, To: to}
}
func opAdd(name string, from, to int) op { return op{Op: "add", Name: name, From: from, To: to} }
func opDelete(name, where string) op     { return op{Op: "delete", Name: name, Where: where} }
func opIndex(name, column, typ string) op {
	return op{Op: "index", Name: name, Column: column, Type: typ}
}
func opTag(name, tag string, version int64) op {
	return op{Op: "tag", Name: name, Tag: tag, Version: version}
}
func opBranch(name, branch string, from, to int) op {
	return op{Op: "branch", Name: name, Branch: branch, From: from, To: to}
}
func opOverwrite(name, kind string, from, to int) op {
	return op{Op: "overwrite", Name: name, Kind: kind, From: from, To: to}
}
func opDrop(name string) op     { return op{Op: "drop", Name: name} }
func opSnapshot(name string) op { return op{Op: "snapshot", Name: name} }
func opOpen(name string) op     { return op{Op: "open", Name: name} }
func opNames() op               { return op{Op: "names"} }

// snapshot is what LanceDB says about a table: what must survive a purge
// pass untouched.
type snapshot struct {
	Rows     int64       `json:"rows"`
	Version  int64       `json:"version"`
	Versions []version   `json:"versions"`
	Indices  []indexInfo `json:"indices"`
	// Tags maps each tag to its version; Branches each branch to its state.
	Tags     map[string]int64  `json:"tags"`
	Branches map[string]branch `json:"branches"`
	// IDsSHA256 digests every id the table returns, sorted.
	IDsSHA256 string `json:"ids_sha256"`
}

type branch struct {
	Rows      int64  `json:"rows"`
	Version   int64  `json:"version"`
	IDsSHA256 string `json:"ids_sha256"`
}

type version struct {
	Version     int64 `json:"version"`
	TimestampMs int64 `json:"timestamp_ms"`
}

type indexInfo struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Columns []string `json:"columns"`
}

type openResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

type versionResult struct {
	Version int64 `json:"version"`
}

// lanceDB runs js/lancedb.mjs against one root.
type lanceDB struct {
	node    string
	script  string
	uri     string
	options map[string]string
}

func newLanceDB(t *testing.T, node, uri string, options map[string]string) *lanceDB {
	t.Helper()
	return &lanceDB{node: node, script: jsScript(t, "lancedb.mjs"), uri: uri, options: options}
}

// run executes ops in one Node process and returns one raw result per op.
// Each Node start with LanceDB costs about a second: batch the ops.
func (l *lanceDB) run(t *testing.T, ops ...op) []json.RawMessage {
	t.Helper()
	req, err := json.Marshal(map[string]any{"uri": l.uri, "storageOptions": l.options, "ops": ops})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.node, l.script)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("lancedb.mjs (%d ops): %v\nstderr:\n%s", len(ops), err, stderr.String())
	}
	t.Logf("lancedb.mjs: %d ops in %v", len(ops), time.Since(start).Round(time.Millisecond))
	var out struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("lancedb.mjs output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if len(out.Results) != len(ops) {
		t.Fatalf("lancedb.mjs: %d results for %d ops", len(out.Results), len(ops))
	}
	return out.Results
}

// decode unmarshals one result into a value of type T.
func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, strings.TrimSpace(string(raw)), err)
	}
	return v
}
