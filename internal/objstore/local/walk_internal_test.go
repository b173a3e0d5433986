package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A directory read as "sub/" and replaced by a link (or removed, or kept)
// before Walk descends into it: the link becomes an object and is never
// entered.
func TestDescendIntoReplacedDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real", "y"), nil, 0o644))
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	top := &level{dirKey: "t.lance/", fd: fd}
	defer top.close()
	s, err := Open(dir)
	require.NoError(t, err)

	for _, tc := range []struct {
		sub      string
		entered  []string // names of the level entered, nil if none
		objectOK bool
	}{
		{sub: "link", objectOK: true},
		{sub: "missing"},
		{sub: "real", entered: []string{"y"}},
	} {
		next, obj, ok, err := s.descend(t.Context(), top, tc.sub)
		require.NoError(t, err, "descend %s", tc.sub)
		require.Equal(t, tc.objectOK, ok, "descend %s: described as an object", tc.sub)
		if ok {
			require.Equal(t, "t.lance/"+tc.sub, obj.Key)
		}
		if tc.entered == nil {
			require.Equal(t, -1, next.fd, "descend %s: entered", tc.sub)
			continue
		}
		require.GreaterOrEqual(t, next.fd, 0, "descend %s", tc.sub)
		require.Equal(t, tc.entered, next.names)
		require.Equal(t, "t.lance/"+tc.sub+"/", next.dirKey)
		next.close()
	}
}
