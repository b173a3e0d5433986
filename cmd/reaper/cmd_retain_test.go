package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// copyLanceTable copies the table LanceDB 0.39 wrote (internal/lance/
// testdata), without its branch, to <root>/<name>.lance.
func copyLanceTable(t *testing.T, root, name string) {
	t.Helper()
	src := "../../internal/lance/testdata/lancedb-0.39/t.lance"
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(rel, "tree") || strings.HasPrefix(rel, filepath.Join("_refs", "branches")) {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, name+".lance", rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		return os.WriteFile(dst, body, 0o644)
	}))
}

// `reaper retain` without --dry-run deletes what --dry-run listed, and a
// second run has nothing to do.
func TestRetainCommandDeletesWhatTheDryRunListed(t *testing.T) {
	root := t.TempDir()
	copyLanceTable(t, root, "events")
	st, err := local.Open(root)
	require.NoError(t, err)
	tb, err := lance.ReadTable(context.Background(), st, "events.lance/")
	require.NoError(t, err)
	before := tb.Versions[4].Timestamp.Add(-time.Millisecond).UTC().Format(time.RFC3339Nano)
	args := []string{"retain", "--root", root, "--before", before, "--allow-short-ttl", "-o", "json", "--log-level", "error"}

	code, out, stderr := run(t, append(args, "--dry-run")...)
	require.Equal(t, exitOK, code, stderr)
	var plan struct {
		Tables []struct {
			Result  string   `json:"result"`
			Removed []uint64 `json:"versions_removed"`
			Files   []struct {
				Key string `json:"key"`
			} `json:"files"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Tables, 1)
	require.Equal(t, "planned", plan.Tables[0].Result)
	for _, f := range plan.Tables[0].Files {
		require.FileExists(t, filepath.Join(root, f.Key))
	}

	code, out, stderr = run(t, args...)
	require.Equal(t, exitOK, code, stderr)
	var ran struct {
		Tables []retainRunJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ran))
	require.Len(t, ran.Tables, 1)
	require.Equal(t, "cleaned", ran.Tables[0].Result)
	require.Equal(t, len(plan.Tables[0].Removed), ran.Tables[0].VersionsDeleted)
	require.Equal(t, int64(len(plan.Tables[0].Files)), ran.Tables[0].Objects)
	for _, f := range plan.Tables[0].Files {
		require.NoFileExists(t, filepath.Join(root, f.Key))
	}
	_, err = lance.ReadTable(context.Background(), st, "events.lance/")
	require.NoError(t, err, "the table still reads")

	code, out, _ = run(t, args...)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, `"result": "nothing_to_do"`)
}
