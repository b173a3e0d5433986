package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestNewShared: two users of one registry count into the same series, and
// every collector is adopted (a field missed in NewShared would stay a
// separate, unregistered collector).
func TestNewShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewShared(reg, Options{})
	b := NewShared(reg, Options{})
	ca, cb := a.Collectors(), b.Collectors()
	require.Len(t, cb, len(ca))
	for i := range ca {
		require.Same(t, ca[i], cb[i], "collector %d not adopted", i)
	}
	a.TablePurged()
	b.TablePurged()
	require.Equal(t, 2.0, testutil.ToFloat64(a.tablesPurged))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)

	require.NotNil(t, NewShared(nil, Options{}), "nil registry: unregistered metrics")
}
