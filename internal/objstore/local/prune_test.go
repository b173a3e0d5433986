package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

func TestPruneEmpty(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dirs    []string // created empty under the root
		files   []string // created under the root
		link    string   // a link under the root to an outside dir holding an empty dir
		prefix  string
		wantErr string   // "" for success
		gone    []string // directories removed
		kept    []string // directories that stay
	}{
		{
			name: "nested empty directories", dirs: []string{"p/a/b/c", "p/a/d", "q/e"}, prefix: "p/",
			gone: []string{"p/a/b/c", "p/a/b", "p/a/d", "p/a", "p"}, kept: []string{"q/e"},
		},
		{
			name: "a file deep inside", dirs: []string{"p/d"}, files: []string{"p/a/b/c/file"}, prefix: "p/",
			wantErr: "prune p/: p/a/b/c/file is not a directory: the directory is not empty",
			kept:    []string{"p/d", "p/a/b/c", "p"},
		},
		{
			name: "a temp file inside", files: []string{"p/a/.reaper-tmp-crashed"}, prefix: "p/",
			wantErr: "p/a/.reaper-tmp-crashed is not a directory", kept: []string{"p/a"},
		},
		{
			name: "a symlinked subdirectory", link: "p/a", dirs: []string{"p/b"}, prefix: "p/",
			wantErr: "prune p/: p/a is not a directory: the directory is not empty", kept: []string{"p/b", "p"},
		},
		{
			name: "below the prefix only", dirs: []string{"p/a/b", "p/c"}, prefix: "p/a/",
			gone: []string{"p/a/b", "p/a"}, kept: []string{"p/c", "p"},
		},
		{name: "missing prefix", dirs: []string{"p"}, prefix: "missing/deeper/", kept: []string{"p"}},
		{name: "prefix crossing a file", files: []string{"f"}, prefix: "f/"},
		{name: "prefix that is a link", link: "p", prefix: "p/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(outside, "empty"), 0o755))
			for _, d := range tc.dirs {
				require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
			}
			for _, f := range tc.files {
				writeFile(t, root, f, "x")
			}
			if tc.link != "" {
				symlink(t, outside, root, tc.link)
			}
			err := open(t, root).PruneEmpty(t.Context(), tc.prefix)
			if tc.wantErr == "" {
				require.NoError(t, err, "prune %s", tc.prefix)
			} else {
				require.ErrorContains(t, err, tc.wantErr, "prune %s", tc.prefix)
				require.ErrorIs(t, err, objstore.ErrNotEmpty, "a caller can tell a tree that is not empty")
			}
			for _, d := range tc.gone {
				require.NoDirExists(t, filepath.Join(root, d))
			}
			for _, d := range tc.kept {
				require.DirExists(t, filepath.Join(root, d))
			}
			for _, f := range tc.files {
				require.FileExists(t, filepath.Join(root, f))
			}
			require.DirExists(t, filepath.Join(outside, "empty"), "never through a link")
			require.DirExists(t, root, "never the root")
		})
	}
}

func TestPruneEmptyInvalidPrefix(t *testing.T) {
	s := open(t, t.TempDir())
	for _, prefix := range []string{"", "p", "a//", "../", "/abs/"} {
		require.ErrorIs(t, s.PruneEmpty(t.Context(), prefix), objstore.ErrInvalidKey, "prune %q", prefix)
	}
}

// A delete removes the directories it emptied, up to the root's; with
// objstore.WithPruneWithin only those strictly below the prefix (a
// retention run: below a table's _indices/, as Lance's cleanup).
func TestDeletePrunesWithin(t *testing.T) {
	keys := []string{"t/_indices/u/v/a.idx", "t/_indices/u/b.idx", "t/_deletions/x.arrow"}
	for _, tc := range []struct {
		name       string
		within     string
		gone, kept []string
	}{
		{"unlimited", "", []string{"t/_indices/u/v", "t/_indices/u", "t/_indices", "t/_deletions", "t"}, nil},
		{"within _indices/", "t/_indices/", []string{"t/_indices/u/v", "t/_indices/u"}, []string{"t/_indices", "t/_deletions", "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, k := range keys {
				writeFile(t, root, k, "x")
			}
			ctx := t.Context()
			if tc.within != "" {
				ctx = objstore.WithPruneWithin(ctx, tc.within)
			}
			require.NoError(t, open(t, root).DeleteBatch(ctx, keys))
			for _, d := range tc.gone {
				require.NoDirExists(t, filepath.Join(root, d))
			}
			for _, d := range tc.kept {
				require.DirExists(t, filepath.Join(root, d))
			}
		})
	}
}
