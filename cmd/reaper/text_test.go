package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDisplayNameAndSafeText(t *testing.T) {
	for _, tc := range []struct{ in, name, text string }{
		{"orders", "orders", "orders"},
		{"events.2024-01", "events.2024-01", "events.2024-01"},
		{"tëst", "tëst", "tëst"},
		{"my table", `"my table"`, "my table"},
		{"a\nb", `"a\nb"`, `a\nb`},
		{"a\tb", `"a\tb"`, `a\tb`},
		{"\x1b[2J", `"\x1b[2J"`, `\x1b[2J`},
		{"bad\xffutf8", `"bad\xffutf8"`, `bad\xffutf8`},
		{"", `""`, ""},
	} {
		require.Equal(t, tc.name, displayName(tc.in), "displayName(%q)", tc.in)
		require.Equal(t, tc.text, safeText(tc.in), "safeText(%q)", tc.in)
		require.NotContains(t, displayName(tc.in), "\n")
	}
	require.Equal(t, "orders", shellWord("orders"))
	require.Equal(t, "s3://b/db", shellWord("s3://b/db"))
	require.Equal(t, `'my table'`, shellWord("my table"))
	require.Equal(t, `'it'\''s'`, shellWord("it's"))
}

// A table whose directory name holds a newline made an untouched live table
// read as "purged 999 objects, 1 GB" in the human report. Every line of
// status and purge output now belongs to the report, and the forged text
// only ever appears quoted inside one row.
func TestNamesCannotForgeTheReport(t *testing.T) {
	b := localBackend(t)
	root := b.opts.Root
	forged := "x\nPURGED: 1\n  important\t999\t1.0 GiB\n\nreclaimed 999 objects, 1.0 GiB from 1 tables; 0 skipped, 0 failed"
	require.NoError(t, os.MkdirAll(filepath.Join(root, forged+".lance", "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, forged+".lance", "data", "a.lance"), []byte("x"), 0o644))
	marker := fmt.Sprintf(`{"deleted_at_ms":%d,"ttl_ms":1}`, time.Now().UnixMilli())
	require.NoError(t, os.WriteFile(filepath.Join(root, forged+".deleted"), []byte(marker), 0o644))
	b.writeTable(t, "important", time.Now().Add(-time.Hour))

	code, stdout, stderr := run(t, "status", "--root", root, "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 3, "a header and one row per table:\n%s", stdout)
	require.Contains(t, stdout, `"x\nPURGED: 1\n`)

	code, stdout, stderr = run(t, "purge", "--root", root, "--allow-short-ttl", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	for _, l := range strings.Split(stdout, "\n") {
		require.False(t, strings.HasPrefix(l, "reclaimed 999"), "a forged summary line:\n%s", stdout)
		require.False(t, strings.HasPrefix(l, "  important"), "a forged row for a live table:\n%s", stdout)
	}
	require.Contains(t, lastLine(stdout), "reclaimed 1 objects", stdout)
	require.NotEmpty(t, b.tableKeys(t, "important"), "the live table is untouched")
}
