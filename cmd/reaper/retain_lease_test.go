package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// retain runs a pass, which takes each table's lease for defaults.lease_ttl
// as purge does, from the file or REAPER_DEFAULTS_LEASE_TTL: a run frozen
// or killed mid-table is then taken over as a purge's would be (the
// retention chaos suite stops runs past 400ms leases). A value that is no
// positive duration is a usage error naming the key, nothing read.
func TestRetainLeaseTTLFromEnvironment(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct{ value, want string }{
		{"0s", "lease_ttl"},
		{"soon", "REAPER_DEFAULTS_LEASE_TTL"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv("REAPER_DEFAULTS_LEASE_TTL", tc.value)
			code, _, stderr := run(t, "retain", "--root", root, "--older-than", "7d", "--log-level", "error")
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
