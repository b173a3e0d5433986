package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

// The CLI and the public API assemble a pass in one place
// (internal/assembly): the same settings over the same roots visit the same
// roots and decide the same, sharding and rails included.
func TestCLIAndAPIPassesAgree(t *testing.T) {
	// Everything is written now (t0) by the store's clock; both passes run
	// with the store's clock moved to t0 + 10 days (setClock's seam).
	t0 := time.UnixMilli(time.Now().UnixMilli())
	now := t0.Add(10 * day)
	g := quiet()
	g.setClock(objstoretest.NewClock(), now)
	ctx := stack.WithWrapBackend(context.Background(), g.wrapStore)
	var uris []string
	var yaml strings.Builder
	yaml.WriteString("roots:\n")
	// Two roots of each shard, whatever the temp directories hash to.
	perShard := [2]int{}
	for tries := 0; perShard[0] < 2 || perShard[1] < 2; tries++ {
		require.Less(t, tries, 64, "no two roots of each shard in 64 temp directories")
		b := localBackend(t)
		if shard := roots.Owner(b.opts.Root, 2); perShard[shard] < 2 {
			perShard[shard]++
		} else {
			continue
		}
		drop := func(name string, ago, ttl time.Duration) {
			b.writeTable(t, name, t0.Add(-time.Hour))
			b.writeMarker(t, name, lifecycle.EncodeMarker(now.Add(-ago), ttl), t0)
		}
		drop("due", 10*day, 7*day)
		drop("notdue", day, 7*day)
		drop("short", day, time.Minute) // below safety.min_ttl
		b.writeTable(t, "live", t0.Add(-time.Hour))
		uris = append(uris, b.opts.Root)
		fmt.Fprintf(&yaml, "  - uri: %q\n", b.opts.Root)
	}
	cfgPath := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(yaml.String()), 0o600))
	settings := map[string]string{"shard.count": "2", "shard.index": "1", "dry_run": "true", "limits.table_concurrency": "1"}

	var sets []string
	for k, v := range settings {
		sets = append(sets, k+"="+v)
	}
	rt, err := newRuntime(ctx, storeOptions{globalOptions: g}, passFlags{ConfigPath: cfgPath, Sets: sets})
	require.NoError(t, err)
	defer rt.close()
	cliRep, err := rt.worker.Pass(ctx, nil)
	require.NoError(t, err)
	var cli []string
	for _, rr := range cliRep.Roots {
		for d := range rr.All() {
			cli = append(cli, fmt.Sprintf("%s %s %s %s", rr.Root, d.Table, d.Action, d.Reason))
		}
	}

	var rs []reaper.Root
	for _, u := range uris {
		rs = append(rs, reaper.Root{URI: u})
	}
	apiRep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{Roots: rs, Settings: settings})
	require.NoError(t, err)
	var api []string
	for _, rr := range apiRep.Roots {
		for d := range rr.All() {
			api = append(api, fmt.Sprintf("%s %s %s %s", rr.Root, d.Table, d.Action, d.Reason))
		}
	}

	slices.Sort(cli)
	slices.Sort(api)
	require.NotEmpty(t, cli)
	require.Len(t, cliRep.Roots, 2, "shard 1 of 2 takes two of the four roots")
	require.Equal(t, cli, api, "the CLI's pass (left) and PurgeRoots' (right)")
	for _, want := range []string{"due dry_run", "notdue skipped not_due", "short skipped short_ttl"} {
		require.True(t, slices.ContainsFunc(cli, func(s string) bool { return strings.Contains(s, want) }), "no %q in %v", want, cli)
	}
}
