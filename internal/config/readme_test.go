package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// README documents every configuration key; this keeps it so.
func TestREADMEDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, k := range Keys() {
		switch k {
		case "log", "defaults", "shard", "limits", "safety", "metrics", "audit", "retention":
			continue // sections; their keys are listed
		}
		if strings.HasPrefix(k, "roots.retention.") || strings.HasPrefix(k, "discover.retention.") {
			continue // the keys of retention, listed with it
		}
		require.True(t, strings.Contains(readme, "`"+k+"`") || strings.Contains(readme, "`"+k+"`,"),
			"README.md does not document the config key %s", k)
	}
}
