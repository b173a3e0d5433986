package local_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// writeFile creates dir/rel (and its parents) holding body, behind the
// store's back.
func writeFile(t *testing.T, dir, rel, body string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755), "mkdir for %s", rel)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644), "write %s", rel)
	return p
}

// crashedTemp leaves at dir/rel a temp file as a writer killed mid-write
// leaves one: a regular file carrying the sticky bit, reaper's temp mark.
func crashedTemp(t *testing.T, dir, rel string) string {
	t.Helper()
	p := writeFile(t, dir, rel, "half a lease")
	require.NoError(t, os.Chmod(p, 0o644|os.ModeSticky), "mark %s", rel)
	return p
}

// symlink creates the link dir/rel pointing at target.
func symlink(t *testing.T, target, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755), "mkdir for %s", rel)
	require.NoError(t, os.Symlink(target, p), "symlink %s -> %s", rel, target)
}

// requireContent checks that the file at p still holds want.
func requireContent(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	require.NoError(t, err, "read %s", p)
	require.Equal(t, want, string(got), "content of %s: got/want", p)
}

// tree lists every path below dir (relative, "/" separated, links not
// followed), to compare a directory before and after.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		paths = append(paths, filepath.ToSlash(rel))
		return err
	}), "walk %s", dir)
	return paths
}

// listKeys lists one level: object keys and prefixes.
func listKeys(t *testing.T, s *local.Store, prefix string) (objs, prefixes []string) {
	t.Helper()
	require.NoError(t, s.List(t.Context(), prefix, func(p objstore.Page) error {
		for _, o := range p.Objects {
			objs = append(objs, o.Key)
		}
		prefixes = append(prefixes, p.Prefixes...)
		return nil
	}), "list %q", prefix)
	return objs, prefixes
}

// walkObjects walks prefix.
func walkObjects(t *testing.T, s *local.Store, prefix string) []objstore.Object {
	t.Helper()
	var objs []objstore.Object
	require.NoError(t, s.Walk(t.Context(), prefix, func(p []objstore.Object) error {
		objs = append(objs, p...)
		return nil
	}), "walk %q", prefix)
	return objs
}

// walkKeys walks prefix and returns the keys.
func walkKeys(t *testing.T, s *local.Store, prefix string) []string {
	t.Helper()
	var keys []string
	for _, o := range walkObjects(t, s, prefix) {
		keys = append(keys, o.Key)
	}
	require.True(t, slices.IsSorted(keys), "walk %q not sorted: %v", prefix, keys)
	return keys
}
