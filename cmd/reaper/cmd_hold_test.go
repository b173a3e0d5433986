package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHoldBlocksPurgeUntilReleased(t *testing.T) {
	ctx := context.Background()
	f := newPurgeFixture(t)
	hold := holdOptions{storeOptions: f.b.opts, Reason: "case 7", Names: []string{"due"}}

	var out bytes.Buffer
	require.Equal(t, exitUsage, exitCode(runHold(ctx, holdOptions{storeOptions: f.b.opts, Names: []string{"due"}}, &out)), "reason is required")
	require.NoError(t, runHold(ctx, hold, &out))
	require.Contains(t, out.String(), "due: held (case 7)")
	require.Equal(t, exitFailed, exitCode(runHold(ctx, hold, &out)), "a second hold is refused, the first kept")

	out.Reset()
	require.NoError(t, runPurge(ctx, f.opts(false, "due"), &out))
	rep, _ := decodeReport(t, out.Bytes())
	require.Empty(t, rep.Purged)
	require.Len(t, rep.Skipped, 1)
	require.Equal(t, "due", rep.Skipped[0].Name)
	require.Contains(t, rep.Skipped[0].Reason, "held: legal hold (case 7)")
	require.NotEmpty(t, f.b.tableKeys(t, "due"))

	out.Reset()
	require.NoError(t, runRelease(ctx, releaseOptions{storeOptions: f.b.opts, Names: []string{"due"}}, &out))
	require.Equal(t, exitFailed, exitCode(runRelease(ctx, releaseOptions{storeOptions: f.b.opts, Names: []string{"due"}}, &out)))
	out.Reset()
	require.NoError(t, runPurge(ctx, f.opts(false, "due"), &out))
	rep, _ = decodeReport(t, out.Bytes())
	require.Len(t, rep.Purged, 1)
	require.Empty(t, f.b.tableKeys(t, "due"))
}

// TestStatusShowsHoldOnLiveTable: a hold placed before any drop shows in
// the table view, not only in -o json.
func TestStatusShowsHoldOnLiveTable(t *testing.T) {
	ctx := context.Background()
	b := localBackend(t)
	b.writeTable(t, "orders", time.Now().Add(-time.Hour))
	var out bytes.Buffer
	require.NoError(t, runHold(ctx, holdOptions{storeOptions: b.opts, Reason: "case 7", Names: []string{"orders"}}, &out))
	out.Reset()
	require.NoError(t, runStatus(ctx, statusOptions{storeOptions: b.opts, Output: formatTable}, &out))
	require.Equal(t, "NAME    STATE   DELETED_AT  TTL  PURGE_AFTER  NOTE\norders  exists  -           -    -            legal hold: case 7\n", out.String())
}
