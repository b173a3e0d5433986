package lance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixtureIndex is the bitmap index the fixture's versions 4 to 6 reference.
const fixtureIndex = "2550c3b9-3346-4fff-9cd0-3ec8a8ddfcd9"

// A table with a symbolic link where Lance keeps a directory (the
// directory moved out of the root, a link left in its place: Lance follows
// it, a local store never does) is refused, naming the link, whichever
// directory it is: a managed one, whose files the plan would silently not
// see; _refs/, its tags or branches, or a branch's tree, which protect
// versions and files a plan would otherwise delete; or an index directory
// a version references. A file in place of the directory is refused the
// same way. Before, the reader saw an empty directory (or, for
// _versions/, "no versions") and retention cleaned around it.
func TestRefusesLinkedDirectories(t *testing.T) {
	for _, sub := range []string{
		"_versions", "_transactions", "data", "_indices", "_deletions",
		"_refs", "_refs/tags", "_refs/branches", "tree", "tree/dev", "tree/dev/_versions",
		"_indices/" + fixtureIndex,
	} {
		t.Run(sub, func(t *testing.T) {
			root := copyFixture(t)
			at := filepath.Join(root, "t.lance", filepath.FromSlash(sub))
			moved := filepath.Join(t.TempDir(), "moved")
			require.NoError(t, os.Rename(at, moved))
			require.NoError(t, os.Symlink(moved, at))
			tb, err := ReadTable(context.Background(), openLocal(t, root), "t.lance/")
			var ue *UnsupportedError
			require.ErrorAs(t, err, &ue)
			require.Contains(t, ue.Reason, sub+" is not a directory (a symbolic link")
			require.Nil(t, tb)
		})
	}
	t.Run("a file for _blobs", func(t *testing.T) {
		root := copyFixture(t)
		writeFile(t, filepath.Join(root, "t.lance", "_blobs"), "not a directory")
		_, err := ReadTable(context.Background(), openLocal(t, root), "t.lance/")
		var ue *UnsupportedError
		require.ErrorAs(t, err, &ue)
		require.Contains(t, ue.Reason, "_blobs is not a directory")
	})
}

// A link elsewhere in a table is no reason to refuse it: a link to a file
// in data/ is an object like any other, and an entry of _indices/ that no
// version references is not read.
func TestToleratesOtherLinks(t *testing.T) {
	root := copyFixture(t)
	dir := filepath.Join(root, "t.lance")
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), filepath.Join(dir, "_indices", "not-an-index")))
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "x.lance"), filepath.Join(dir, "data", "linked.lance")))
	tb, err := ReadTable(context.Background(), openLocal(t, root), "t.lance/")
	require.NoError(t, err)
	require.True(t, hasObject(tb, DataDir+"linked.lance"), "listed as the link itself")
}
