package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// examplePath is config/reaper.yaml at the repository root.
func examplePath(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "config", "reaper.yaml")
}

// TestExampleConfig keeps config/reaper.yaml in step with Config: it loads
// and validates as-is, every yaml key of Config appears in it (found by
// reflection over the yaml tags), and its values are the defaults.
func TestExampleConfig(t *testing.T) {
	t.Parallel()
	path := examplePath(t)
	c, err := Load(path, nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	// It names no root, so it runs unchanged against the one given, and
	// says in one line what to set when none is.
	require.EqualError(t, c.ValidateForPass(), "config: roots = []: no root and no discover pattern; pass --root /path/to/lancedb (e.g. --root ./var/demo/db after 'make run'), set REAPER_ROOTS, or list roots or discover patterns in the file")
	withRoot, err := Load(path, func(k string) (string, bool) { return "/data/lancedb", k == EnvRoots })
	require.NoError(t, err)
	require.NoError(t, withRoot.ValidateForPass())

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &doc))
	present := map[string]bool{}
	collectKeys(doc.Content[0], "", present)
	for _, k := range Keys() {
		if list, field, ok := strings.Cut(k, "."); ok && (list == "roots" || list == "discover") {
			// These lists ship empty: their fields are shown in the
			// commented examples, nested keys by their last segment.
			field = field[strings.LastIndex(field, ".")+1:]
			require.Regexp(t, `(?m)^\s*#[\s#-]*`+field+`:`, string(data), "config/reaper.yaml lacks a commented example of %q", k)
			continue
		}
		require.True(t, present[k], "config/reaper.yaml lacks key %q: add it with a comment (what, default, when to change)", k)
	}

	// Apart from the example roots, the file shows the defaults.
	want := Default()
	want.Roots, want.Discover = c.Roots, c.Discover
	want.Audit.StorageOptions = c.Audit.StorageOptions
	require.Equal(t, want, c, "config/reaper.yaml must show the default of every key")
}

// collectKeys records the dotted path of every mapping key; list elements
// add no index ("roots.uri").
func collectKeys(n *yaml.Node, prefix string, out map[string]bool) {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			collectKeys(item, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if prefix != "" {
				key = prefix + "." + key
			}
			out[key] = true
			if n.Content[i].Value != "storage_options" { // option names are not config keys
				collectKeys(n.Content[i+1], key, out)
			}
		}
	}
}
