package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMessages: the exact line and exit code of each mistake a new user
// makes in the first hour (issue 13, item 6).
func TestMessages(t *testing.T) {
	b := localBackend(t)
	b.writeTable(t, "orders", time.Now().Add(-time.Hour))
	root := b.opts.Root
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badYAML, []byte("roots:\n  - uri: /a\n   storage_options: {}\n"), 0o644))
	missing := filepath.Join(t.TempDir(), "nope")
	missingRootConfig := filepath.Join(t.TempDir(), "missing-root.yaml")
	require.NoError(t, os.WriteFile(missingRootConfig, []byte("log:\n  format: text\nroots:\n  - uri: "+missing+"\n"), 0o644))

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, when not ""
		stderrLast string
		// onlyLine: stderr is stderrLast alone and stdout is empty.
		onlyLine bool
	}{
		{name: "unknown command with a flag", args: []string{"prune", "--root", "/x"}, code: exitUsage,
			stderrLast: `reaper: unknown command "prune": did you mean "purge"? run 'reaper --help' for the list of commands`},
		{name: "unknown root flag", args: []string{"--bogus"}, code: exitUsage,
			stderrLast: "reaper: unknown flag: --bogus; run 'reaper --help' for the commands and flags"},
		{name: "negative ttl", args: []string{"drop", "--root", root, "--ttl", "-1d", "orders"}, code: exitUsage,
			stderrLast: `reaper: drop: invalid argument "-1d" for "--ttl" flag: duration "-1d" is not positive; write e.g. "90s", "30m", "7d" or "1d12h"; run 'reaper drop --help' for the flags`},
		{name: "ttl in words", args: []string{"drop", "--root", root, "--ttl", "7 days", "orders"}, code: exitUsage,
			stderrLast: `reaper: drop: invalid argument "7 days" for "--ttl" flag: duration "7 days": write it as "7d": a number and its unit (s, m, h or d) with no space, several in a row as in "1d12h"; run 'reaper drop --help' for the flags`},
		{name: "yaml indentation", args: []string{"purge", "--config", badYAML}, code: exitUsage,
			stderrLast: "reaper: config file " + badYAML + ": line 3: did not find expected '-' indicator"},
		{name: "revive a live table", args: []string{"revive", "--root", root, "orders"}, code: exitFailed,
			stdout:     "orders: not revived: it is live already (no marker orders.deleted); nothing to undo\n",
			stderrLast: "reaper: revive: 1 of 1 table(s) failed; see the per-table lines above"},
		{name: "release without a hold", args: []string{"release", "--root", root, "orders"}, code: exitFailed,
			stdout:     "orders: not released: it has no legal hold; nothing to release\n",
			stderrLast: "reaper: release: 1 of 1 table(s) failed; see the per-table lines above"},
		// One line, as status says it: not a log line, a report and an exit
		// line that all say the same.
		{name: "purge a missing root", args: []string{"purge", "--root", missing}, code: exitUsage, onlyLine: true,
			stderrLast: "reaper: purge: " + missing + ": directory does not exist; create it (mkdir -p " + missing + ") or fix the root URI"},
		// From a configuration file the pass runs (a CronJob records and
		// pushes it): the report says what to set, the exit line points at it.
		{name: "purge a missing root from a config file", args: []string{"purge", "--config", missingRootConfig}, code: exitUsage,
			stdout: "ROOTS FAILED: 1 (not read; nothing in them was purged)\n" +
				"  ROOT" + strings.Repeat(" ", len("file://"+missing)-len("ROOT")) + "  ERROR\n" +
				"  file://" + missing + "  directory does not exist; create it (mkdir -p " + missing + ") or fix the root URI\n\n" +
				"reclaimed 0 objects, 0 B from 0 tables; 0 skipped, 0 failed; 1 root(s) could not be read\n",
			stderrLast: "reaper: purge: 1 root(s) could not be reached, a configuration error (ROOTS FAILED above, or the failed entries without a name in the JSON, say what to set); nothing in them was purged"},
		{name: "retain a placeholder table, deleting", args: []string{"retain", "--root", root, "--older-than", "7d", "-o", "json"}, code: exitOK,
			stdout: "PREFIX:{\n  \"tables\": [\n    {\n      \"name\": \"orders\",\n      \"result\": \"unsupported\""},
		{name: "retain without a cutoff", args: []string{"retain", "--root", root, "--dry-run"}, code: exitUsage,
			stderrLast: "reaper: retain: pass --older-than (e.g. --older-than 7d) or --before (an RFC 3339 instant)"},
		{name: "retain with a bad instant", args: []string{"retain", "--root", root, "--dry-run", "--before", "yesterday"}, code: exitUsage,
			stderrLast: `reaper: retain: --before "yesterday": want an RFC 3339 instant such as 2026-11-01T00:00:00Z or 2026-11-01T00:00:00.250+01:00`},
		{name: "retain a recent cutoff", args: []string{"retain", "--root", root, "--dry-run", "--older-than", "10m"}, code: exitUsage,
			stderrLast: "SUFFIX: versions that recent may still be read; pass --allow-short-ttl to plan it anyway"},
		{name: "retain a placeholder table", args: []string{"retain", "--root", root, "--dry-run", "--older-than", "7d", "-o", "json"}, code: exitOK,
			stdout: "PREFIX:{\n  \"tables\": [\n    {\n      \"name\": \"orders\",\n      \"result\": \"unsupported\""},
		{name: "status of a missing root", args: []string{"status", "--root", missing}, code: exitUsage,
			stderrLast: "reaper: open local store " + missing + ": directory does not exist; create it (mkdir -p " + missing + ") or fix the root URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append(tc.args, "--log-level", "error")...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			if tc.onlyLine {
				// At the default log level, not --log-level error.
				code, stdout, stderr = run(t, tc.args...)
				require.Equal(t, tc.code, code)
				require.Empty(t, stdout)
				require.Equal(t, tc.stderrLast+"\n", stderr)
				return
			}
			switch {
			case strings.HasPrefix(tc.stdout, "PREFIX:"):
				require.True(t, strings.HasPrefix(stdout, strings.TrimPrefix(tc.stdout, "PREFIX:")), stdout)
			case tc.stdout != "":
				require.Equal(t, tc.stdout, stdout)
			}
			if suffix, ok := strings.CutPrefix(tc.stderrLast, "SUFFIX:"); ok {
				require.True(t, strings.HasSuffix(lastLine(stderr), suffix), lastLine(stderr))
				return
			}
			require.Equal(t, tc.stderrLast, lastLine(stderr))
		})
	}
}

// TestRunHelpRootOptional: run and purge take their roots from --config or
// REAPER_ROOTS as well, so their help does not call --root required.
func TestRunHelpRootOptional(t *testing.T) {
	for _, c := range []string{"run", "purge"} {
		code, stdout, _ := run(t, c, "--help")
		require.Equal(t, exitOK, code)
		var line string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.Contains(l, "--root string") {
				line = l
			}
		}
		require.Contains(t, line, "replaces the roots and discover patterns of --config and REAPER_ROOTS", c)
		require.NotContains(t, line, "required", c)
	}
}

// TestStatusReadsReaperRoots: status, like purge, takes its root from
// REAPER_ROOTS when --root is not given; several roots are refused.
func TestStatusReadsReaperRoots(t *testing.T) {
	b := localBackend(t)
	b.writeTable(t, "orders", time.Now().Add(-time.Hour))
	o := b.opts
	o.Root = ""
	o.lookupEnv = envOf(map[string]string{"REAPER_ROOTS": b.opts.Root})
	var out bytes.Buffer
	require.NoError(t, runStatus(context.Background(), statusOptions{storeOptions: o, Output: formatTable}, &out))
	require.Contains(t, out.String(), "orders  exists")

	o.lookupEnv = envOf(map[string]string{"REAPER_ROOTS": b.opts.Root + ",/other"})
	err := runStatus(context.Background(), statusOptions{storeOptions: o, Output: formatTable}, &out)
	require.Equal(t, exitUsage, exitCode(err))
	require.EqualError(t, err, "REAPER_ROOTS names 2 roots and this command takes one: pass --root")
}

// TestPausedReasonNamesRealSettings: the paused skip names settings that
// exist (there is no --paused flag).
func TestPausedReasonNamesRealSettings(t *testing.T) {
	f := newPurgeFixture(t)
	o := f.opts(false, "due")
	o.Sets = []string{"paused=true"}
	var out bytes.Buffer
	err := runPurge(context.Background(), o, &out)
	require.Equal(t, exitRefused, exitCode(err), "a paused root is a refusal: %v", err)
	rep, _ := decodeReport(t, out.Bytes())
	require.Len(t, rep.Skipped, 1)
	require.Equal(t, "paused: paused by configuration (paused: true, REAPER_PAUSED=true or --set paused=true)", rep.Skipped[0].Reason)
}
