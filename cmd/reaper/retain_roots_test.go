package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// copyLanceTable writes the table LanceDB 0.39 wrote (lancetest.LanceDB)
// as <root>/<name>.lance on the local disk.
func copyLanceTable(t *testing.T, root, name string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(root, 0o755))
	st, err := local.Open(root)
	require.NoError(t, err)
	lancetest.LanceDB(t, st, name+".lance/")
}

// retainRootsFixture is a configuration of three roots, each holding a copy
// of the LanceDB table: a configured local root, a configured S3 root
// (versitygw) with its storage options, and a local root found by a
// discover pattern.
type retainRootsFixture struct {
	config string
	roots  []string // canonical URIs, sorted
	// before is a cutoff that removes the table's first versions.
	before string
	local  []string // the local roots' directories, by roots' order where local
}

func newRetainRootsFixture(t *testing.T) retainRootsFixture {
	configured := t.TempDir()
	copyLanceTable(t, configured, "events")
	parent := t.TempDir()
	discovered := filepath.Join(parent, "tenant-a")
	copyLanceTable(t, discovered, "orders")
	require.NoError(t, os.MkdirAll(filepath.Join(parent, "not-a-database"), 0o755))
	s3b := newBackend(t, objstoretest.S3Store.NewRoot(t))
	lancetest.LanceDB(t, s3b.store(t), "clicks.lance/")

	var so strings.Builder
	for _, kv := range s3b.opts.StorageOptions {
		k, v, _ := strings.Cut(kv, "=")
		so.WriteString("\n      " + k + ": \"" + v + "\"")
	}
	cfg := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("roots:\n  - uri: "+configured+"\n  - uri: "+s3b.opts.Root+
		"\n    storage_options:"+so.String()+"\ndiscover:\n  - uri: "+parent+"/*/\n"), 0o644))
	roots := []string{"file://" + configured, "file://" + discovered, s3b.opts.Root}
	slices.Sort(roots)
	// A minute ahead: the tables were written now, and a version goes
	// only when the store wrote it before the cutoff too.
	return retainRootsFixture{config: cfg, roots: roots,
		before: time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)}
}

// retainJSONReport is the JSON of retain, dry run or not.
type retainJSONReport struct {
	Tables []struct {
		Root    string   `json:"root"`
		Name    string   `json:"name"`
		Result  string   `json:"result"`
		Removed []uint64 `json:"versions_removed"`
		Files   []struct {
			Key string `json:"key"`
		} `json:"files"`
		Bytes           int64 `json:"bytes"`
		VersionsDeleted int   `json:"versions_deleted"`
		Objects         int64 `json:"objects"`
	} `json:"tables"`
	FailedRoots []failedRootJSON `json:"failed_roots"`
}

// `reaper retain --config` covers every root of the configuration, the
// configured ones (local and S3, with its storage options) and the one a
// discover pattern finds, as purge --config does: the dry run plans each
// root's table, and the run then deletes on each root what its plan listed.
func TestRetainConfigCoversEveryRoot(t *testing.T) {
	f := newRetainRootsFixture(t)
	args := []string{"retain", "--config", f.config, "--before", f.before, "--allow-short-ttl", "-o", "json", "--log-level", "error"}

	code, out, stderr := run(t, append(args, "--dry-run")...)
	require.Equal(t, exitOK, code, stderr)
	var plan retainJSONReport
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	require.Empty(t, plan.FailedRoots)
	var roots []string
	for _, tb := range plan.Tables {
		roots = append(roots, tb.Root)
		require.Equal(t, "planned", tb.Result, "%s %s", tb.Root, tb.Name)
		require.Equal(t, plan.Tables[0].Removed, tb.Removed, "the same table, the same plan")
	}
	require.Equal(t, f.roots, roots, "one table per root, sorted by root")

	code, out, stderr = run(t, args...)
	require.Equal(t, exitOK, code, stderr)
	var ran retainJSONReport
	require.NoError(t, json.Unmarshal([]byte(out), &ran), out)
	require.Len(t, ran.Tables, len(f.roots))
	for i, tb := range ran.Tables {
		require.Equal(t, f.roots[i], tb.Root)
		require.Equal(t, "cleaned", tb.Result, "%s %s", tb.Root, tb.Name)
		require.Equal(t, len(plan.Tables[i].Removed), tb.VersionsDeleted)
		require.Equal(t, int64(len(plan.Tables[i].Files)), tb.Objects)
	}

	code, out, _ = run(t, append(args, "--dry-run")...)
	require.Equal(t, exitOK, code)
	require.Equal(t, len(f.roots), strings.Count(out, `"result": "nothing_to_do"`), out)
}

// The table form over roots has a ROOT column; --root replaces the
// configuration's roots, as it does for purge.
func TestRetainConfigTableForm(t *testing.T) {
	f := newRetainRootsFixture(t)
	code, out, stderr := run(t, "retain", "--config", f.config, "--before", f.before, "--allow-short-ttl", "--dry-run", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1+len(f.roots)+1, out)
	require.True(t, strings.HasPrefix(lines[0], "ROOT "), out)
	for i, r := range f.roots {
		require.True(t, strings.HasPrefix(lines[1+i], r+" "), out)
		require.Contains(t, lines[1+i], " planned ")
	}
	require.Contains(t, lines[len(lines)-1], "from 3 tables; 0 unsupported")

	only := strings.TrimPrefix(f.roots[0], "file://")
	code, out, stderr = run(t, "retain", "--config", f.config, "--root", only, "--before", f.before, "--allow-short-ttl", "--dry-run", "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	var plan retainJSONReport
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	require.Len(t, plan.Tables, 1)
	require.Equal(t, f.roots[0], plan.Tables[0].Root)
}

// A root that cannot be read is listed and fails the run, the other roots
// are still planned or cleaned: a missing directory (the configuration
// must fix it: exit 2), a discover pattern whose parent is missing (exit
// 1). A cutoff below safety.min_ttl is refused before any root is touched.
func TestRetainConfigFailedRoots(t *testing.T) {
	f := newRetainRootsFixture(t)
	missing := filepath.Join(t.TempDir(), "nosuch")
	base := []string{"retain", "--before", f.before, "--allow-short-ttl", "-o", "json", "--log-level", "error"}
	for _, tc := range []struct {
		name   string
		yaml   string
		dryRun bool
		code   int
		failed []string
		last   string
	}{
		{"missing root, dry run", "roots:\n  - uri: " + strings.TrimPrefix(f.roots[0], "file://") + "\n  - uri: " + missing + "\n", true, exitUsage,
			[]string{"file://" + missing}, "reaper: retain: 1 root(s) could not be reached, a configuration error (ROOTS FAILED above, or failed_roots in the JSON, say what to set); nothing in them was retained"},
		{"missing root, deleting", "roots:\n  - uri: " + strings.TrimPrefix(f.roots[0], "file://") + "\n  - uri: " + missing + "\n", false, exitUsage,
			[]string{"file://" + missing}, "reaper: retain: 1 root(s) could not be reached, a configuration error (ROOTS FAILED above, or failed_roots in the JSON, say what to set); nothing in them was retained"},
		{"missing discovery parent", "roots:\n  - uri: " + strings.TrimPrefix(f.roots[0], "file://") + "\ndiscover:\n  - uri: " + missing + "/*/\n", true, exitFailed,
			nil, "reaper: retain: root discovery incomplete, some roots were not visited: discover " + missing + "/*/: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "reaper.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.yaml), 0o644))
			args := append(base, "--config", cfg)
			if tc.dryRun {
				args = append(args, "--dry-run")
			}
			code, out, stderr := run(t, args...)
			require.Equal(t, tc.code, code, "stdout %s\nstderr %s", out, stderr)
			var rep retainJSONReport
			require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
			require.Len(t, rep.Tables, 1, "the readable root is still worked on")
			require.Equal(t, f.roots[0], rep.Tables[0].Root)
			var failed []string
			for _, r := range rep.FailedRoots {
				failed = append(failed, r.Root)
				require.Contains(t, r.Error, "directory does not exist")
			}
			require.Equal(t, tc.failed, failed)
			require.True(t, strings.HasPrefix(lastLine(stderr), tc.last), lastLine(stderr))
		})
	}

	code, out, stderr := run(t, "retain", "--config", f.config, "--older-than", "10m", "--log-level", "error")
	require.Equal(t, exitUsage, code, out)
	require.Contains(t, lastLine(stderr), "below safety.min_ttl")
	require.Empty(t, out, "refused before any root was touched")
}

// A dry run over the roots of a configuration sets each root's
// reclaimable gauges to what its plan would remove, written with
// --textfile; a table reaper refuses (unsupported) adds nothing.
func TestRetainConfigGauges(t *testing.T) {
	f := newRetainRootsFixture(t)
	// The configured local root also holds a table reaper refuses.
	dir := strings.TrimPrefix(f.roots[0], "file://")
	copyLanceTable(t, dir, "blobs")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "blobs.lance", "_blobs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blobs.lance", "_blobs", "x"), []byte("x"), 0o644))
	prom := filepath.Join(t.TempDir(), "reaper.prom")
	code, out, stderr := run(t, "retain", "--config", f.config, "--before", f.before, "--allow-short-ttl", "--dry-run", "-o", "json",
		"--textfile", prom, "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	var plan retainJSONReport
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	bytes := map[string]int64{}
	versions := map[string]int{}
	results := map[string]int{}
	for _, tb := range plan.Tables {
		results[tb.Result]++
		if tb.Result == "planned" {
			bytes[tb.Root] += tb.Bytes
			versions[tb.Root] += len(tb.Removed)
		}
	}
	require.Equal(t, map[string]int{"planned": 3, "unsupported": 1}, results)
	body, err := os.ReadFile(prom)
	require.NoError(t, err)
	text := string(body)
	for _, r := range f.roots {
		require.NotZero(t, bytes[r])
		require.Contains(t, text, fmt.Sprintf("reaper_retention_reclaimable_bytes{root=%q} %d\n", r, bytes[r]))
		require.Contains(t, text, fmt.Sprintf("reaper_retention_reclaimable_versions{root=%q} %d\n", r, versions[r]))
	}
}

// Without --older-than and --before, `retain --config` takes each root's
// policy from its retention section and leaves out the roots where it is
// not enabled; with none enabled it says what to set.
func TestRetainConfigPolicyFromConfiguration(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	copyLanceTable(t, a, "events")
	copyLanceTable(t, b, "events")
	cfg := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("safety:\n  allow_short_ttl: true\nretention:\n  older_than: 1ms\nroots:\n  - uri: "+a+
		"\n    retention:\n      enabled: true\n  - uri: "+b+"\n"), 0o644))
	code, out, stderr := run(t, "retain", "--config", cfg, "--dry-run", "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	var plan retainJSONReport
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	require.Len(t, plan.Tables, 1, "only the root where retention is enabled")
	require.Equal(t, "file://"+a, plan.Tables[0].Root)
	require.Equal(t, "planned", plan.Tables[0].Result)
	require.NotEmpty(t, plan.Tables[0].Removed)

	code, _, stderr = run(t, "retain", "--config", cfg, "--dry-run", "--keep-versions", "3")
	require.Equal(t, exitUsage, code)
	require.Contains(t, lastLine(stderr), "--keep-versions, --delete-unverified and --unverified-after go with --older-than or --before")

	none := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(none, []byte("roots:\n  - uri: "+b+"\n"), 0o644))
	code, out, stderr = run(t, "retain", "--config", none, "--dry-run")
	require.Equal(t, exitUsage, code, out)
	require.Equal(t, "reaper: retain: retention is enabled on none of the 1 root(s) of the configuration: pass --older-than or --before, or set retention.enabled: true (at the top, or in a root's or discover pattern's retention section)", lastLine(stderr))
}
