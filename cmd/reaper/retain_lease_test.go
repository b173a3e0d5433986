package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
)

// retain takes each table's lease for defaults.lease_ttl as purge reads it
// without a config file, from REAPER_DEFAULTS_LEASE_TTL: a run frozen or
// killed mid-table is then taken over as a purge's would be (the retention
// chaos suite stops runs past 400ms leases). A value that is no positive
// duration is a usage error naming the variable.
func TestRetainLeaseTTLFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want time.Duration
		err  string
	}{
		{"unset", nil, reaper.DefaultLeaseTTL, ""},
		{"set", map[string]string{"REAPER_DEFAULTS_LEASE_TTL": "400ms"}, 400 * time.Millisecond, ""},
		{"zero", map[string]string{"REAPER_DEFAULTS_LEASE_TTL": "0s"}, 0, "REAPER_DEFAULTS_LEASE_TTL"},
		{"not a duration", map[string]string{"REAPER_DEFAULTS_LEASE_TTL": "soon"}, 0, "REAPER_DEFAULTS_LEASE_TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := quiet()
			g.lookupEnv = envOf(tc.env)
			got, err := g.envLeaseTTL()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var ue *usageError
				require.True(t, errors.As(err, &ue), "a usage error (exit 2): %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
