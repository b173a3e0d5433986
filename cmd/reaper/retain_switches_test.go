package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// tableFiles lists the files under <root>/<name>.lance/.
func tableFiles(t *testing.T, root, name string) []string {
	t.Helper()
	st, err := local.Open(root)
	require.NoError(t, err)
	var out []string
	require.NoError(t, st.Walk(context.Background(), name+".lance/", func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}

// retainPaths are the commands that can remove old versions of a live
// table: retain on a root, retain over a configuration, a purge pass over
// a configuration with retention on, and the daemon's first pass. Each
// gets a fresh root with the table LanceDB wrote as "events" and a policy
// that removes versions of it; file says the path reads the configuration
// file.
var retainPaths = []struct {
	name string
	file bool
	run  func(t *testing.T, root, cfg string) (code int, stdout, stderr string)
}{
	{"retain --root", false, func(t *testing.T, root, _ string) (int, string, string) {
		return run(t, "retain", "--root", root, "--before", time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano),
			"--keep-versions", "2", "--allow-short-ttl", "--log-level", "error")
	}},
	{"retain --config", true, func(t *testing.T, _, cfg string) (int, string, string) {
		return run(t, "retain", "--config", cfg, "--log-level", "error")
	}},
	{"purge --config", true, func(t *testing.T, _, cfg string) (int, string, string) {
		return run(t, "purge", "--config", cfg, "--log-level", "error")
	}},
	{"run (the daemon)", true, daemonFirstPass},
}

// daemonFirstPass runs `reaper run --config cfg` until its first pass is
// over (its /metrics count it), then shuts it down.
func daemonFirstPass(t *testing.T, _, cfg string) (int, string, string) {
	t.Helper()
	d, err := startDaemon(t, runOptions{storeOptions: storeOptions{globalOptions: quiet()}, passFlags: passFlags{ConfigPath: cfg,
		Sets: []string{"schedule=@every 10m"}}})
	if err != nil {
		return exitCode(err), "", err.Error()
	}
	d.waitMetric(t, "reaper_passes_total{result=", "the first pass is over")
	err = d.stop(t)
	return exitCode(err), "", fmt.Sprint(err)
}

// retainRoot is a root holding the LanceDB table "events" and a
// configuration cleaning it (older_than 1ms: the table was written just
// now; the newest two versions kept), with top-level YAML lines top and
// lines under safety:.
func retainRoot(t *testing.T, top, safety string) (root, cfg string) {
	t.Helper()
	root = t.TempDir()
	copyLanceTable(t, root, "events")
	cfg = filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("roots:\n  - uri: "+root+"\nsafety:\n  allow_short_ttl: true\n"+safety+
		"retention:\n  enabled: true\n  older_than: 1ms\n  keep_versions: 2\n"+top), 0o644))
	return root, cfg
}

// Every kill switch stops version retention on every path that deletes:
// dry_run, paused, REAPER_PAUSED, the root's PAUSE object and
// safety.deletions_enabled (and its old name, safety.retention_enabled)
// each leave the table whole, where the same command without the switch
// removes versions of it. (reaper retain used to read none of them.) A
// switch in the file is for the paths that read one.
func TestRetainHonoursEveryKillSwitch(t *testing.T) {
	switches := []struct {
		name        string
		top, safety string
		env         map[string]string
		pause       bool
	}{
		{name: "none"},
		{name: "dry_run in the file", top: "dry_run: true\n"},
		{name: "REAPER_DRY_RUN", env: map[string]string{"REAPER_DRY_RUN": "true"}},
		{name: "paused in the file", top: "paused: true\n"},
		{name: "REAPER_PAUSED", env: map[string]string{"REAPER_PAUSED": "true"}},
		{name: "the root's PAUSE", pause: true},
		{name: "deletions_enabled in the file", safety: "  deletions_enabled: false\n"},
		{name: "retention_enabled in the file (the old name)", safety: "  retention_enabled: false\n"},
		{name: "REAPER_SAFETY_DELETIONS_ENABLED", env: map[string]string{"REAPER_SAFETY_DELETIONS_ENABLED": "false"}},
		{name: "REAPER_SAFETY_RETENTION_ENABLED (the old name)", env: map[string]string{"REAPER_SAFETY_RETENTION_ENABLED": "false"}},
	}
	for _, path := range retainPaths {
		for _, sw := range switches {
			if (sw.top != "" || sw.safety != "") && !path.file {
				continue // no file on that path
			}
			t.Run(path.name+"/"+sw.name, func(t *testing.T) {
				root, cfg := retainRoot(t, sw.top, sw.safety)
				for k, v := range sw.env {
					t.Setenv(k, v)
				}
				if sw.pause {
					require.NoError(t, os.MkdirAll(filepath.Join(root, "_reaper"), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(root, "_reaper", "PAUSE"), []byte("audit"), 0o644))
				}
				before := tableFiles(t, root, "events")
				code, out, stderr := path.run(t, root, cfg)
				require.NotEqual(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
				after := tableFiles(t, root, "events")
				if sw.name == "none" {
					require.Less(t, len(after), len(before), "without a switch the path removes old versions:\n%s\n%s", out, stderr)
					return
				}
				require.Equal(t, before, after, "%s: nothing deleted\n%s\n%s", sw.name, out, stderr)
			})
		}
	}
}

// reaper retain writes the audit ledger a purge writes (audit.location)
// and obeys the pass's limits: with limits.max_objects_per_pass spent by
// the first table, the second is not started (skipped, limit).
func TestRetainWritesTheLedgerAndObeysTheLimits(t *testing.T) {
	root, _ := retainRoot(t, "", "")
	copyLanceTable(t, root, "orders")
	audit := t.TempDir()
	t.Setenv("REAPER_AUDIT_LOCATION", audit)
	t.Setenv("REAPER_LIMITS_MAX_OBJECTS_PER_PASS", "1")
	t.Setenv("REAPER_LIMITS_TABLE_CONCURRENCY", "1") // one table after the other: the first spends the budget
	code, out, stderr := run(t, "retain", "--root", root, "--before", time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano),
		"--keep-versions", "2", "--allow-short-ttl", "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	require.Contains(t, out, `"result": "cleaned"`)
	require.Contains(t, out, `"result": "limit"`)

	st, err := local.Open(audit)
	require.NoError(t, err)
	rows, err := ledger.Read(context.Background(), st, time.Time{})
	require.NoError(t, err)
	actions := map[string]string{}
	for _, r := range rows {
		actions[r.Table] = r.Action + "/" + r.Reason[:min(len(r.Reason), len("old_versions"))]
	}
	require.Equal(t, "cleaned/old_versions", actions["events"], "%v", rows)
	require.Contains(t, actions["orders"], "skipped/limit")
}

// A retention run cut short leaves its record; status shows it (the NOTE
// column, "retention_record" in the JSON) and the dry run says what of it
// is still true, before the next run takes it over.
func TestStatusAndDryRunShowARetentionRecord(t *testing.T) {
	root, _ := retainRoot(t, "", "")
	require.NoError(t, os.WriteFile(filepath.Join(root, "events.reaper-retain"),
		[]byte(`{"format":2,"owner":"host/1","generation":1,"created_at_ms":1,"cutoff_ms":1,"versions":[],"files":[]}`), 0o644))
	code, out, stderr := run(t, "status", "--root", root)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "a version-retention run left its record events.reaper-retain")
	code, out, stderr = run(t, "status", "--root", root, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"retention_record": true`)

	code, out, stderr = run(t, "retain", "--root", root, "--older-than", "7d", "--dry-run", "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"owner": "host/1"`)
	require.Contains(t, out, `"files_still_true": 0`)
}
