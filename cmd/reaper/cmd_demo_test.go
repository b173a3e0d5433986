package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	ctx := context.Background()
	for run := range 2 { // the second run replaces the first demo
		var out bytes.Buffer
		require.NoError(t, runDemo(ctx, demoOptions{globalOptions: quiet(), Dir: dir}, &out), "run %d", run)
		s := out.String()
		for _, want := range []string{"Step 1", "PURGED: 3", "reclaimed", "events.2024", "not due until", "live: a table without a marker is never purged"} {
			require.Contains(t, s, want, "run %d", run)
		}

		db := filepath.Join(dir, demoDB)
		gone := []string{"events.2024.lance", "events.2024.deleted", "clickstream_raw.lance", "clickstream_raw.deleted", "old_experiments.deleted"}
		for _, name := range gone {
			_, err := os.Stat(filepath.Join(db, name))
			require.ErrorIs(t, err, os.ErrNotExist, "%s must be purged", name)
		}
		kept := []string{"customers.lance/_versions/1.manifest", "orders.lance/_versions/2.manifest",
			"staging_import.lance/_versions/1.manifest", "staging_import.deleted"}
		for _, name := range kept {
			require.FileExists(t, filepath.Join(db, name))
		}
		require.FileExists(t, filepath.Join(dir, demoSentinel))
	}
}

func TestDemoRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(precious, []byte("keep me"), 0o644))
	var out bytes.Buffer
	err := runDemo(context.Background(), demoOptions{globalOptions: quiet(), Dir: dir}, &out)
	require.Equal(t, exitUsage, exitCode(err), "got %v", err)
	require.Contains(t, err.Error(), demoSentinel)
	require.FileExists(t, precious)
	require.NoFileExists(t, filepath.Join(dir, demoSentinel))
}
