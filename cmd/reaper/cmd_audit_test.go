package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// auditFixture writes two passes to a ledger in a temp dir: yesterday's,
// 30 hours before now, and today's, one hour before now.
func auditFixture(t *testing.T) (dir string, now time.Time) {
	dir = t.TempDir()
	s, err := local.Open(dir)
	require.NoError(t, err)
	now = time.Date(2026, 5, 2, 12, 0, 0, 0, time.UTC)
	ttl := 7 * 24 * time.Hour
	deleted := now.Add(-8 * 24 * time.Hour)

	old := now.Add(-30 * time.Hour)
	w := ledger.NewWriter(s, "pass-old", old)
	w.Add(ledger.Row{Root: "/data/db", Table: "old_table", Action: string(outcome.Purged), Objects: 3, Bytes: 2048,
		Started: old, Finished: old.Add(time.Second), Version: "v1", Host: "h1"})
	_, err = w.Close(t.Context())
	require.NoError(t, err)

	recent := now.Add(-time.Hour)
	w = ledger.NewWriter(s, "pass-new", recent)
	w.Add(ledger.Row{Root: "/data/db", Table: "events", Action: string(outcome.Purged), Objects: 12, Bytes: 3 << 20,
		DeletedAt: deleted, TTL: &ttl, PurgeAfter: deleted.Add(ttl),
		Started: recent, Finished: recent.Add(2 * time.Second), Version: "v2", Host: "h2"})
	w.Add(ledger.Row{Root: "/data/db", Table: "users", Action: string(outcome.Failed), Error: "delete data/1.lance:\npermission denied",
		Started: recent.Add(time.Second), Finished: recent.Add(3 * time.Second), Version: "v2", Host: "h2"})
	w.Add(ledger.Row{Root: "/data/db", Table: "logs", Action: string(outcome.Skipped), Reason: "not due",
		Started: recent.Add(2 * time.Second), Finished: recent.Add(2 * time.Second), Version: "v2", Host: "h2"})
	_, err = w.Close(t.Context())
	require.NoError(t, err)
	return dir, now
}

func auditOpts(dir string, now time.Time) auditOptions {
	g := quiet()
	g.setClock(objstoretest.NewClock(), now)
	return auditOptions{globalOptions: g, Location: dir, Output: formatTable}
}

func TestAuditTable(t *testing.T) {
	dir, now := auditFixture(t)
	var out bytes.Buffer
	require.NoError(t, runAudit(t.Context(), auditOpts(dir, now), &out)) // default --since 24h
	want := `TIME                  ROOT      TABLE   ACTION   OBJECTS  BYTES    REASON/ERROR
2026-05-02T11:00:00Z  /data/db  events  purged   12       3.0 MiB  -
2026-05-02T11:00:01Z  /data/db  users   failed   0        0 B      delete data/1.lance: permission denied
2026-05-02T11:00:02Z  /data/db  logs    skipped  0        0 B      not due
`
	require.Equal(t, want, out.String())

	o := auditOpts(dir, now)
	o.Since = 2 * 24 * time.Hour
	out.Reset()
	require.NoError(t, runAudit(t.Context(), o, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, "header and four rows: %s", out.String())
	require.Contains(t, lines[1], "old_table", "oldest first")

	o.Since = 10 * time.Minute
	out.Reset()
	require.NoError(t, runAudit(t.Context(), o, &out))
	require.Equal(t, "no tables recorded in the ledger since 2026-05-02T11:50:00Z\n", out.String())
}

func TestAuditJSON(t *testing.T) {
	dir, now := auditFixture(t)
	o := auditOpts(dir, now)
	o.Output = formatJSON
	var out bytes.Buffer
	require.NoError(t, runAudit(t.Context(), o, &out))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "output: %s", out.String())
	require.Len(t, got, 3)
	require.Equal(t, map[string]any{
		"pass_id": "pass-new", "root": "/data/db", "table": "events", "action": "purged",
		"reason": nil, "deleted_at": "2026-04-24T12:00:00.000Z", "ttl_ms": float64(7 * 24 * 3600 * 1000),
		"purge_after": "2026-05-01T12:00:00.000Z", "objects": float64(12), "bytes": float64(3 << 20),
		"started": "2026-05-02T11:00:00.000Z", "finished": "2026-05-02T11:00:02.000Z",
		"error": nil, "reaper_version": "v2", "host": "h2", "recovered_by": nil, "location": nil, "pending": false,
	}, got[0])
	require.Equal(t, "delete data/1.lance:\npermission denied", got[1]["error"])
	require.Nil(t, got[1]["ttl_ms"])
	require.Nil(t, got[1]["deleted_at"])
	require.Equal(t, "not due", got[2]["reason"])

	// Every key is a Parquet column, and pending (a row read from a
	// journal, not yet in a file).
	cols := []string{"pending"}
	for _, f := range ledger.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	for k := range got[0] {
		require.Contains(t, cols, k)
	}
	require.Len(t, got[0], len(cols))

	o.Since = time.Minute
	out.Reset()
	require.NoError(t, runAudit(t.Context(), o, &out))
	require.JSONEq(t, "[]", out.String(), "nothing recorded: an empty array")
}

func TestAuditFlags(t *testing.T) {
	dir, now := auditFixture(t)
	run := func(args ...string) (string, error) {
		g := quiet()
		g.setClock(objstoretest.NewClock(), now)
		var out bytes.Buffer
		cmd := newAuditCmd(&g, &out)
		cmd.SetArgs(args)
		cmd.SetErr(io.Discard)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%w", err) })
		err := cmd.ExecuteContext(t.Context())
		return out.String(), err
	}
	out, err := run("--location", dir, "--since", "1d12h", "-o", "json")
	require.NoError(t, err)
	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 4, "1d12h reaches yesterday's pass")
	require.Equal(t, "old_table", got[0]["table"])

	out, err = run("--location", dir, "--since", "2h")
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 4, "2h: header and today's three rows")

	_, err = run("--location", dir, "--since", "yesterday")
	require.Equal(t, exitUsage, exitCode(err), "bad --since: got %v", err)
	require.ErrorContains(t, err, "yesterday")
}

func TestAuditRegistered(t *testing.T) {
	var out, errOut bytes.Buffer
	code := execute(t.Context(), []string{"audit", "--since", "1h"}, &out, &errOut)
	require.Equal(t, exitUsage, code, "stderr: %s", errOut.String())
	require.Contains(t, errOut.String(), "--location is required")
}

func TestAuditUsageErrors(t *testing.T) {
	dir, now := auditFixture(t)
	table := filepath.Join(t.TempDir(), "db", "t.lance")
	require.NoError(t, os.MkdirAll(table, 0o755))
	for name, tc := range map[string]struct {
		mutate func(o *auditOptions)
		want   string
	}{
		"no location":      {func(o *auditOptions) { o.Location = "" }, "--location is required"},
		"missing dir":      {func(o *auditOptions) { o.Location = filepath.Join(dir, "nope") }, "does not exist"},
		"inside a table":   {func(o *auditOptions) { o.Location = table }, "inside table directory"},
		"s3 inside table":  {func(o *auditOptions) { o.Location = "s3://bucket/db/t.lance/audit" }, "inside table directory"},
		"bad scheme":       {func(o *auditOptions) { o.Location = "ftp://bucket/x" }, "unsupported scheme"},
		"option on local":  {func(o *auditOptions) { o.StorageOptions = []string{"aws_region=us-east-1"} }, "s3:// and s3+ddb:// roots only"},
		"malformed option": {func(o *auditOptions) { o.StorageOptions = []string{"aws_region"} }, "missing '='"},
		"bad output":       {func(o *auditOptions) { o.Output = "yaml" }, "want table or json"},
	} {
		t.Run(name, func(t *testing.T) {
			o := auditOpts(dir, now)
			tc.mutate(&o)
			err := runAudit(t.Context(), o, &bytes.Buffer{})
			require.Equal(t, exitUsage, exitCode(err), "got %v", err)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestAuditCorruptLedger(t *testing.T) {
	dir, now := auditFixture(t)
	key := "passes/2026/05/02/20260502T115900.000Z-broken.parquet"
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(key)), []byte("junk"), 0o644))
	err := runAudit(t.Context(), auditOpts(dir, now), &bytes.Buffer{})
	require.Equal(t, exitFailed, exitCode(err), "got %v", err)
	require.ErrorContains(t, err, key)
}

// Rows still in a journal (a pass running, or killed and not folded yet)
// and rows a later pass folded from one are shown, and marked.
func TestAuditShowsJournalAndRecoveredRows(t *testing.T) {
	dir, now := auditFixture(t)
	s, err := local.Open(dir)
	require.NoError(t, err)
	started := now.Add(-10 * time.Minute)
	opts := ledger.JournalOptions{TTL: time.Hour, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return started }}
	j := ledger.NewJournal(s, "pass-killed", started, opts)
	require.NoError(t, j.Intent(t.Context(), ledger.Row{PassID: "pass-killed", Root: "/data/db", Table: "doomed",
		Started: started, Version: "v3", Host: "h3"}, 5, 500, false))

	var out bytes.Buffer
	require.NoError(t, runAudit(t.Context(), auditOpts(dir, now), &out))
	require.Regexp(t, `doomed\s+failed\s+0\s+0 B\s+\[pending\] unfinished: pass pass-killed recorded its intent to purge 5 object\(s\)`, out.String())

	// Killed: its lease expires, and the next pass folds its journal.
	require.NoError(t, j.Close(t.Context(), true)) // releases the lease, keeps the record
	_, err = ledger.Recover(t.Context(), s, "pass-next", opts)
	require.NoError(t, err)
	out.Reset()
	o := auditOpts(dir, now)
	o.Output = formatJSON
	require.NoError(t, runAudit(t.Context(), o, &out))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows), out.String())
	var doomed map[string]any
	for _, r := range rows {
		if r["table"] == "doomed" {
			require.Nil(t, doomed, "one row: %s", out.String())
			doomed = r
		}
	}
	require.Equal(t, "pass-next", doomed["recovered_by"])
	require.Equal(t, false, doomed["pending"])
	require.Equal(t, "pass-killed", doomed["pass_id"])

	out.Reset()
	require.NoError(t, runAudit(t.Context(), auditOpts(dir, now), &out))
	require.Contains(t, out.String(), "[recovered by pass-next] unfinished: pass pass-killed")
}

// TestAuditFilters: --action, --table and --root keep the rows they name
// (each repeatable, all of them at once); an unknown action is a usage
// error naming the actions.
func TestAuditFilters(t *testing.T) {
	dir, now := auditFixture(t)
	rows := func(mod func(*auditOptions)) []string {
		o := auditOpts(dir, now)
		o.Since, o.Output = 2*24*time.Hour, formatJSON
		mod(&o)
		var out bytes.Buffer
		require.NoError(t, runAudit(t.Context(), o, &out))
		var got []auditJSON
		require.NoError(t, json.Unmarshal(out.Bytes(), &got))
		var names []string
		for _, r := range got {
			names = append(names, r.Table)
		}
		return names
	}
	require.Equal(t, []string{"users"}, rows(func(o *auditOptions) { o.Actions = []string{"failed"} }))
	require.Equal(t, []string{"old_table", "events", "logs"}, rows(func(o *auditOptions) { o.Actions = []string{"purged", "skipped"} }))
	require.Equal(t, []string{"events"}, rows(func(o *auditOptions) { o.Tables = []string{"events"} }))
	require.Equal(t, []string{"old_table", "events"}, rows(func(o *auditOptions) { o.Actions, o.Tables = []string{"purged"}, []string{"events", "old_table"} }))
	require.Len(t, rows(func(o *auditOptions) { o.Roots = []string{"/data/db"} }), 4)
	require.Empty(t, rows(func(o *auditOptions) { o.Roots = []string{"s3://other/db"} }))

	code, stdout, _ := run(t, "audit", "--location", dir, "--since", "100000d", "--action", "failed,skipped")
	require.Equal(t, exitOK, code)
	require.Equal(t, 3, strings.Count(stdout, "\n"), "header, users and logs: %s", stdout)
	code, stdout, _ = run(t, "audit", "--location", dir, "--since", "100000d", "--table", "nope")
	require.Equal(t, exitOK, code)
	require.True(t, strings.HasPrefix(stdout, "no rows in the ledger since "), stdout)
	require.True(t, strings.HasSuffix(stdout, " match --action, --table and --root\n"), stdout)
	code, _, stderr := run(t, "audit", "--location", dir, "--action", "deleted")
	require.Equal(t, exitUsage, code)
	require.Equal(t, `reaper: audit: --action "deleted": want one of purged, skipped, dry_run, failed, conflict, held, refused, cleaned`+"\n", stderr)
}

// TestAuditOfRetention: reaper audit reads back what version retention
// did in a root: the table it cleaned (--action cleaned --root), and, for
// a pass that only looked at its live tables, one row of the root that
// counts them (no row each).
func TestAuditOfRetention(t *testing.T) {
	root, _, _ := retainFixture(t)
	audit := t.TempDir()
	t.Setenv("REAPER_AUDIT_LOCATION", audit)
	before := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	for range 2 {
		code, stdout, stderr := run(t, "retain", "--root", root, "--before", before, "--allow-short-ttl", "--log-level", "error")
		require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	code, stdout, stderr := run(t, "audit", "--location", audit, "--action", "cleaned", "--root", root, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	var cleaned []auditJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &cleaned))
	require.Len(t, cleaned, 1, stdout)
	require.Equal(t, "events", cleaned[0].Table)
	require.True(t, strings.HasPrefix(*cleaned[0].Reason, "old_versions: version retention: removed "), *cleaned[0].Reason)

	code, stdout, stderr = run(t, "audit", "--location", audit, "--action", "skipped", "--root", root, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	var idle []auditJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &idle))
	require.Len(t, idle, 1, "the second pass: one row for the root, none for the table: %s", stdout)
	require.Equal(t, "", idle[0].Table)
	require.Equal(t, "nothing_to_do: version retention: 1 live table(s) with no version old enough to remove (no row each)", *idle[0].Reason)

	code, stdout, _ = run(t, "audit", "--location", audit, "--table", "events", "--root", "/elsewhere")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "no rows in the ledger since ")
}
