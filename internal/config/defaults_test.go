package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
)

// The defaults other packages own reach the configuration unchanged.
func TestDefaultsAreTheOwners(t *testing.T) {
	d := Default()
	for _, tc := range []struct {
		key       string
		got, want time.Duration
	}{
		{"defaults.ttl", d.Defaults.TTL.D(), lifecycle.DefaultTTL},
		{"defaults.skew_allowance", d.Defaults.SkewAllowance.D(), lifecycle.DefaultSkewAllowance},
		{"defaults.lease_ttl", d.Defaults.LeaseTTL.D(), lock.DefaultTTL},
		{"limits.retry_max_elapsed", d.Limits.RetryMaxElapsed.D(), retry.DefaultMaxElapsed},
	} {
		require.Equal(t, tc.want, tc.got, tc.key)
	}
}
