package lancetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

func TestTableLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		tb   Table
		want []string
	}{
		{"small", Small(2), []string{"_transactions/0-a1b2c3d4.txn", "_versions/1.manifest", "data/000000-0a1b.lance", "data/000001-0a1b.lance"}},
		{"full", Full(1), []string{
			"_deletions/0-1-0.arrow",
			"_indices/0c2f3e9a-1111-2222-3333-444455556666/index.idx",
			"_transactions/0-a1b2c3d4.txn", "_transactions/1-a1b2c3d5.txn",
			"_versions/1.manifest", "_versions/2.manifest", "_versions/3.manifest",
			"data/000000-0a1b.lance",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.tb.Keys())
			require.Equal(t, len(tc.want), tc.tb.Len())
		})
	}
}

func TestPutAndWrite(t *testing.T) {
	s := memstore.New()
	require.Equal(t, 8, Full(1).Put(t, s, "t.lance/"))
	got, _, err := s.Get(context.Background(), "t.lance/_versions/2.manifest", 1<<20)
	require.NoError(t, err)
	require.Equal(t, Body("_versions/2.manifest"), got)

	dir := t.TempDir()
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	objects, size := Small(1).Write(t, dir, mtime)
	require.Equal(t, int64(3), objects)
	var want int64
	for _, b := range Small(1).Files() {
		want += int64(len(b))
	}
	require.Equal(t, want, size)
	fi, err := os.Stat(filepath.Join(dir, "_versions", "1.manifest"))
	require.NoError(t, err)
	require.True(t, fi.ModTime().Equal(mtime))
}
