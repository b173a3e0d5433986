package main

import (
	"bytes"
	"context"
	"io/fs"
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
		// The tables LanceDB wrote (demodata/), whole: V2 manifest names,
		// 2^64-1 - version.
		kept := []string{"customers.lance/_versions/18446744073709551612.manifest", "orders.lance/_versions/18446744073709551613.manifest",
			"staging_import.lance/_versions/18446744073709551614.manifest", "staging_import.deleted"}
		for _, name := range kept {
			require.FileExists(t, filepath.Join(db, name))
		}
		for _, table := range []string{"customers", "orders", "staging_import"} {
			want, err := fs.Glob(demoData, "demodata/"+table+".lance/*/*")
			require.NoError(t, err)
			got, err := filepath.Glob(filepath.Join(db, table+".lance", "*", "*"))
			require.NoError(t, err)
			require.Len(t, got, len(want), "%s: every file of the table", table)
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
