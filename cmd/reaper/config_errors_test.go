package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigErrorsOncePerLine: a setting every root inherits from the
// top-level section is reported once, and several problems each on a line
// of their own (they were joined with "\n" escapes on one line, the
// inherited one repeated per root).
func TestConfigErrorsOncePerLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`retention:
  enabled: true
  older_than: 10m
roots:
  - uri: `+filepath.Join(dir, "a")+`
  - uri: `+filepath.Join(dir, "b")+`
    retention: {keep_versions: 0}
discover:
  - uri: `+filepath.Join(dir, "t")+`/*/
`), 0o644))
	for _, cmd := range []string{"purge", "retain"} {
		code, stdout, stderr := run(t, cmd, "--config", cfg)
		require.Equal(t, exitUsage, code, stdout)
		require.Equal(t, "reaper: config: retention.older_than = 10m0s: is below safety.min_ttl 1h0m0s: versions that recent may still be read; raise it to safety.min_ttl or more, or set safety.allow_short_ttl: true\n"+
			"reaper: config: roots[1].retention.keep_versions = 0: must be at least 1; keep at least the newest version: set 1 or more\n", stderr)
	}
}
