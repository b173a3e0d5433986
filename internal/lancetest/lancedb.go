package lancetest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// LanceDB writes the table LanceDB 0.39 wrote (internal/lance/testdata,
// whose README says how) into s under dir (lifecycle.TableDir(name)) and
// returns its keys, sorted: six versions, a deletion file, a bitmap index,
// a tag on version 2 and a restore of version 2 as version 6. Its branch
// is left out: the branch names main by the absolute path it was written
// at. Unlike Small's tables it is a real table: internal/lance reads it and
// retention plans it.
func LanceDB(t testing.TB, s objstore.Store, dir string) []string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	src := filepath.Join(filepath.Dir(file), "..", "lance", "testdata", "lancedb-0.39", "t.lance")
	var keys []string
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "tree/") || strings.HasPrefix(rel, "_refs/branches/") {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		keys = append(keys, dir+rel)
		_, err = s.Put(context.Background(), dir+rel, body)
		return err
	}))
	slices.Sort(keys)
	return keys
}
