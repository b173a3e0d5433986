package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRootHints: a root one level too high (its children hold the
// tables) or too low (a table's own directory) is a usage error that names
// the right root, for status, purge and retain alike, where each said
// "no tables" and exited 0; an empty database still says so, exit 0.
func TestRootHints(t *testing.T) {
	top := t.TempDir()
	db := filepath.Join(top, "db")
	copyLanceTable(t, db, "events")
	require.NoError(t, os.MkdirAll(filepath.Join(db, "orders.lance", "_versions"), 0o755))
	empty := filepath.Join(top, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))
	many := t.TempDir()
	for _, tenant := range []string{"a", "b"} {
		copyLanceTable(t, filepath.Join(many, tenant), "events")
	}
	table := filepath.Join(db, "events.lance")
	for _, tc := range []struct {
		root, want string
	}{
		{top, "%s: " + top + " holds no tables, but db/ below it holds 2: pass --root " + db},
		{table, "%s: " + table + " is a table directory, not a database root: pass the directory that holds it, --root " + db},
		{filepath.Join(table, "_versions"), ""}, // below a table: no table, no versions of its own (nothing to say)
		{many, "%s: " + many + " holds no tables, but directories below it do (a/, b/: 2 tables): pass one of them as --root, e.g. --root " +
			filepath.Join(many, "a") + ", or cover each with the discover pattern " + filepath.Join(many, "*") + "/ in a configuration"},
	} {
		for _, cmd := range [][]string{{"status"}, {"purge", "--dry-run"}, {"retain", "--older-than", "7d", "--dry-run"}} {
			code, stdout, stderr := run(t, append(cmd, "--root", tc.root, "--log-level", "error")...)
			if tc.want == "" {
				require.Equal(t, exitOK, code, stderr)
				continue
			}
			require.Equal(t, exitUsage, code, "%v %s\nstdout:\n%s\nstderr:\n%s", cmd, tc.root, stdout, stderr)
			require.Equal(t, "reaper: "+strings.Replace(tc.want, "%s", cmd[0], 1)+"\n", stderr)
		}
	}
	code, stdout, _ := run(t, "status", "--root", empty)
	require.Equal(t, exitOK, code)
	require.Equal(t, "no tables in this root\n", stdout, "a new database is empty, and that is all")
}
