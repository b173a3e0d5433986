package reaper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Namespace.Purge applies the TTL floor `reaper purge` applies (1h unless
// told otherwise): a due table whose TTL is below it is kept, nothing
// deleted, dry run or not, until the caller lifts the floor.
func TestNamespacePurgeAppliesTheTTLFloor(t *testing.T) {
	ctx := context.Background()
	r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
	files := writeTable(t, r, "short", 3)
	ns := openFacade(t, r)
	dropDue(t, ns, r, "short") // a 1ms TTL, due now

	st, err := ns.Status(ctx, "short")
	require.NoError(t, err)
	require.True(t, st[0].BelowTTLFloor(reaper.DefaultMinTTL))
	require.False(t, st[0].BelowTTLFloor(time.Millisecond))

	for _, opts := range []reaper.PurgeOptions{{}, {DryRun: true}, {MinTTL: time.Second}} {
		res, err := ns.Purge(ctx, "short", opts)
		require.ErrorIs(t, err, reaper.ErrShortTTL, "%+v", opts)
		require.Zero(t, res.Objects, "%+v", opts)
		st, err := ns.Status(ctx, "short")
		require.NoError(t, err)
		require.Equal(t, reaper.StateSoftDeleted, st[0].State, "%+v", opts)
	}

	res, err := ns.Purge(ctx, "short", reaper.PurgeOptions{DryRun: true, MinTTL: time.Millisecond})
	require.NoError(t, err, "a floor at the TTL keeps nothing")
	require.Equal(t, reaper.OutcomeDryRun, res.Outcome)
	res, err = ns.Purge(ctx, "short", reaper.PurgeOptions{AllowShortTTL: true})
	require.NoError(t, err)
	require.Equal(t, reaper.OutcomePurged, res.Outcome)
	require.Equal(t, files, res.Objects)
}
