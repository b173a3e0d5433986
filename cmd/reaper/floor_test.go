package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const shortTTLText = "ttl 1m is below safety.min_ttl 1h: purge skips it (short_ttl) unless run with --allow-short-ttl (or safety.allow_short_ttl: true)"

// TestShortTTLDemoHint follows the demo's hint: drop with --ttl 1m warns
// about the floor, status does not call the table plainly due, purge names
// the flag, and purge with --allow-short-ttl a minute later reclaims it.
func TestShortTTLDemoHint(t *testing.T) {
	ctx := context.Background()
	b := localBackend(t)
	t0 := time.UnixMilli(time.Now().UnixMilli())
	b.writeTable(t, "orders", t0.Add(-time.Hour))

	var out, errOut bytes.Buffer
	o := b.opts
	o.Stderr = &errOut
	o.setClock(b.clock, t0)
	require.NoError(t, runDrop(ctx, dropOptions{storeOptions: o, TTL: time.Minute, Names: []string{"orders"}}, &out))
	require.Equal(t, "reaper: warning: orders: "+shortTTLText+"\n", errOut.String())

	later := t0.Add(2 * time.Minute)
	out.Reset()
	so := statusOptions{storeOptions: b.opts, Output: formatTable}
	so.setClock(b.clock, later)
	require.NoError(t, runStatus(ctx, so, &out))
	require.Contains(t, out.String(), "past its ttl, but "+shortTTLText)
	require.NotContains(t, out.String(), "  due\n")

	out.Reset()
	so.Output = formatJSON
	require.NoError(t, runStatus(ctx, so, &out))
	var st []statusJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &st))
	require.Len(t, st, 1)
	require.True(t, st[0].Due)
	require.True(t, st[0].BelowMinTTL)

	out.Reset()
	po := purgeOptions{storeOptions: b.opts, Output: formatJSON}
	po.setClock(b.clock, later)
	require.NoError(t, runPurge(ctx, po, &out))
	rep, _ := decodeReport(t, out.Bytes())
	require.Len(t, rep.Skipped, 1)
	require.Equal(t, "short ttl: ttl 1m0s is below safety.min_ttl 1h0m0s; pass --allow-short-ttl or set safety.allow_short_ttl to purge it", rep.Skipped[0].Reason)

	out.Reset()
	po.AllowShortTTL = true
	require.NoError(t, runPurge(ctx, po, &out))
	rep, _ = decodeReport(t, out.Bytes())
	require.Len(t, rep.Purged, 1)
	require.Equal(t, "orders", rep.Purged[0].Name)
}

// TestShortTTLFloorFromEnv: the floor drop and status apply is purge's,
// REAPER_SAFETY_* included.
func TestShortTTLFloorFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		warn string
	}{
		{"default floor", nil, "reaper: warning: t: " + shortTTLText + "\n"},
		{"allowed", map[string]string{"REAPER_SAFETY_ALLOW_SHORT_TTL": "true"}, ""},
		{"lower floor", map[string]string{"REAPER_SAFETY_MIN_TTL": "30s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := localBackend(t)
			b.writeTable(t, "t", time.Now().Add(-time.Hour))
			var out, errOut bytes.Buffer
			o := b.opts
			o.Stderr, o.lookupEnv = &errOut, envOf(tc.env)
			require.NoError(t, runDrop(context.Background(), dropOptions{storeOptions: o, TTL: time.Minute, Names: []string{"t"}}, &out))
			require.Equal(t, tc.warn, errOut.String())
			require.True(t, strings.HasPrefix(out.String(), "t: dropped (soft-deleted): ttl 1m,"), out.String())
		})
	}
}
