package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ledgerColumns are docs/FORMAT.md's audit-ledger columns, in order.
var ledgerColumns = []string{"pass_id", "root", "table", "action", "reason", "deleted_at", "ttl_ms", "purge_after",
	"objects", "bytes", "started", "finished", "error", "reaper_version", "host", "recovered_by", "location"}

// TestLedgerReadByHyparquet: a pass's audit ledger, read by hyparquet (an
// independent Parquet reader, npm), has docs/FORMAT.md's columns and
// metadata, a row per decision with the outcome words, the error of a
// failed row, and a row for a root that could not be read.
func TestLedgerReadByHyparquet(t *testing.T) {
	node := requireNode(t)
	bin := reaperBin(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "db")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.deleted"), []byte("nope"), 0o644))
	audit := filepath.Join(dir, "audit")
	cfg := filepath.Join(dir, "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("roots:\n  - uri: "+root+"\n  - uri: "+filepath.Join(dir, "missing")+
		"\naudit:\n  location: "+audit+"\nlog:\n  format: text\n"), 0o644))
	cmd := exec.Command(bin, "purge", "--config", cfg)
	cmd.Env = hermeticEnv()
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "an invalid marker and a missing root fail the pass: %s", out)

	files, err := filepath.Glob(filepath.Join(audit, "passes", "*", "*", "*", "*.parquet"))
	require.NoError(t, err)
	require.Len(t, files, 1, "%s", out)
	js, err := exec.Command(node, jsScript(t, "ledger.mjs"), files[0]).Output()
	require.NoError(t, err)
	var got struct {
		Columns  []string
		Metadata map[string]string
		Rows     []map[string]any
	}
	require.NoError(t, json.Unmarshal(js, &got), "%s", js)
	require.Equal(t, ledgerColumns, got.Columns)
	require.NotEmpty(t, got.Metadata["reaper.pass_id"])
	_, err = time.Parse(time.RFC3339Nano, got.Metadata["reaper.pass_started"])
	require.NoError(t, err, "reaper.pass_started %q", got.Metadata["reaper.pass_started"])

	byTable := map[string]map[string]any{}
	for _, r := range got.Rows {
		require.Equal(t, got.Metadata["reaper.pass_id"], r["pass_id"])
		byTable[r["table"].(string)] = r
	}
	bad := byTable["bad"]
	require.NotNil(t, bad, "rows: %v", got.Rows)
	require.Equal(t, "failed", bad["action"])
	require.Contains(t, bad["error"], "invalid_marker")
	require.EqualValues(t, 0, bad["objects"])
	missing := byTable[""]
	require.NotNil(t, missing, "a row for the root that could not be read: %v", got.Rows)
	require.Equal(t, "failed", missing["action"])
	require.Equal(t, "error", missing["reason"])
	require.Contains(t, missing["root"], "missing")
	require.NotEmpty(t, missing["error"])
}
