package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
)

// --shard I/N:table splits the tables of one root between replicas: each
// replica visits the root and purges the due tables hashed to it, so each
// table is purged by exactly one of them.
func TestShardFlagSplitsTables(t *testing.T) {
	b := localBackend(t)
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("t%02d", i)
		b.writeTable(t, name, time.Now().Add(-30*day))
		b.writeMarker(t, name, lifecycle.EncodeMarker(time.Now(), 7*day), time.Now())
		names = append(names, name)
		b.writeTable(t, "live"+name, time.Now().Add(-30*day)) // under the blast radius's 50%
	}
	root, err := resolveRoot(b.opts.Root)
	require.NoError(t, err)
	clock := objstoretest.NewClock() // the shards run 8 days after the drops
	purgedBy := map[string][]int{}
	for i := range 3 {
		var out strings.Builder
		o := purgeOptions{storeOptions: storeOptions{globalOptions: quiet(), Root: b.opts.Root}, Output: "json"}
		o.setClock(clock, time.Now().Add(8*day))
		o.Shard = fmt.Sprintf("%d/3:table", i)
		require.NoError(t, runPurge(context.Background(), o, &out))
		rep, _ := decodeReport(t, []byte(out.String()))
		for _, p := range rep.Purged {
			require.Equal(t, i, roots.TableOwner(root, p.Name, 3), "replica %d purged %s", i, p.Name)
			purgedBy[p.Name] = append(purgedBy[p.Name], i)
		}
	}
	require.Len(t, purgedBy, len(names), "every table purged: %v", purgedBy)
	for name, by := range purgedBy {
		require.Len(t, by, 1, "%s purged by replicas %v", name, by)
	}
}

// --shard takes I/N, with :root or :table after it; anything else is a
// usage error naming the flag.
func TestShardFlagForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag  string
		want  config.Shard
		usage string
	}{
		{flag: "1/3", want: config.Shard{Index: 1, Count: 3, By: config.ShardByRoot}},
		{flag: "1/3:root", want: config.Shard{Index: 1, Count: 3, By: config.ShardByRoot}},
		{flag: "2/3:table", want: config.Shard{Index: 2, Count: 3, By: config.ShardByTable}},
		{flag: "2/3:tables", usage: "want I/N (roots) or I/N:table"},
		{flag: "2/3:", usage: "want I/N (roots) or I/N:table"},
		{flag: "2:table", usage: "want I/N (roots) or I/N:table"},
		{flag: "x/3:table", usage: "want a whole number"},
	} {
		cfg := config.Default()
		err := setShard(&cfg, tc.flag)
		if tc.usage != "" {
			require.ErrorContains(t, err, tc.usage, tc.flag)
			require.ErrorContains(t, err, "--shard")
			require.Equal(t, exitUsage, exitCode(err), tc.flag)
			continue
		}
		require.NoError(t, err, tc.flag)
		require.Equal(t, tc.want.Index, cfg.Shard.Index, tc.flag)
		require.Equal(t, tc.want.Count, cfg.Shard.Count, tc.flag)
		require.Equal(t, tc.want.By, cfg.Shard.By, tc.flag)
	}
}
