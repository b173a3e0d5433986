package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckNode runs scripts/check-node.sh (what make runs before npm
// install) against fake node binaries: its exit code and its one line.
func TestCheckNode(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "check-node.sh"))
	require.NoError(t, err)
	_, err = os.Stat(script) // bash reads it: the stat keys go test's result cache on it
	require.NoError(t, err)
	for _, tc := range []struct {
		name, version string // version "" = no node on PATH
		wantCode      int
		wantOut       string
	}{
		{"missing", "", 1, "check-node: node not found: the interop suite (make test, make interop) needs Node 22 or newer (20 works, with an npm EBADENGINE warning); install it, or run 'make unit' to skip the LanceDB tests\n"},
		{"too old", "v18.19.0", 1, "check-node: node v18.19.0 is too old: the interop suite needs Node 22 or newer (20 works); upgrade node, or run 'make unit' to skip the LanceDB tests\n"},
		{"node 20", "v20.20.2", 0, "check-node: node v20.20.2: @lancedb/lancedb 0.39.0 declares node >= 22, so npm prints an EBADENGINE warning; it is harmless (the suite passes on Node 20), Node 22 silences it\n"},
		{"node 22", "v22.11.0", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.version != "" {
				fake := "#!/bin/sh\necho " + tc.version + "\n"
				require.NoError(t, os.WriteFile(filepath.Join(dir, "node"), []byte(fake), 0o755))
			}
			bash, err := exec.LookPath("bash")
			require.NoError(t, err)
			cmd := exec.Command(bash, script)
			cmd.Env = []string{"PATH=" + dir}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantCode, code, "output: %s", out)
			require.Equal(t, tc.wantOut, string(out))
		})
	}
}
