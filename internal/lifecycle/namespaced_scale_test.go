//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/retention"
)

// A multi-tenant root, a LanceDB namespace per tenant and thousands of
// tables in them, is planned from one paged listing of the root's top
// level, as a root of as many root tables is: nothing is read per
// namespaced table. A status lists the top of each namespaced table's
// directory once (to tell a table from a reserved name or a deregistered
// table); a retention plan of a table reads what it reads of a root table.
// BENCHMARKS.md ("Tables in namespaces") quotes this test's log.
func TestNamespacedRootCostS3(t *testing.T) {
	const tenants, perTenant = 300, 10
	ctx := context.Background()
	s, _, rc := s3Stack(t)
	ns := newNS(t, s, &clock{})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range tenants {
		for j := range perTenant {
			dir := fmt.Sprintf("%08x_tenant_%03d$t%02d/", i*perTenant+j, i, j)
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				_, err := s.Put(ctx, dir+"_versions/18446744073709551614.manifest", []byte("m"))
				require.NoError(t, err)
			})
		}
	}
	wg.Wait()
	putLanceFixture(t, s, "00000000_tenant_000$t00/")
	for _, k := range []string{"__manifest/_versions/18446744073709551614.manifest", "top.lance/_versions/18446744073709551614.manifest"} {
		_, err := s.Put(ctx, k, []byte("m"))
		require.NoError(t, err)
	}
	entries := tenants*perTenant + 2
	pages := (entries + 999) / 1000

	rc.Reset()
	start := time.Now()
	live := 0
	_, err := ns.PlanEach(ctx, nil, time.Time{}, nil, func(c PlanClass, _ TableStatus) error {
		if c == PlanLive {
			live++
		}
		return nil
	})
	require.NoError(t, err)
	plan := time.Since(start)
	require.Equal(t, tenants*perTenant+1, live)
	require.Equal(t, map[string]int{s3.OpListObjectsV2: pages}, opCounts(rc.Counts()), "a plan: the root's listing alone")
	t.Logf("plan of a root of %d tables in %d namespaces (and a root table): %d requests (%v) in %v", live-1, tenants, rc.Total(), rc.Counts(), plan.Round(time.Millisecond))

	rc.Reset()
	start = time.Now()
	n := 0
	require.NoError(t, ns.EachStatus(ctx, nil, func(TableStatus, time.Time) error { n++; return nil }))
	status := time.Since(start)
	require.Equal(t, live, n)
	require.Equal(t, map[string]int{s3.OpListObjectsV2: pages + tenants*perTenant}, opCounts(rc.Counts()), "a status: the root's listing and one listing per namespaced table")
	t.Logf("status of the same root: %d requests (%v) in %v", rc.Total(), rc.Counts(), status.Round(time.Millisecond))

	// A namespaced table's retention read costs what a root table's does.
	now, err := s.Now(ctx)
	require.NoError(t, err)
	policy := retention.Policy{Before: now.Add(time.Second), KeepVersions: 2}
	putLanceFixture(t, s, "root_twin")
	cost := func(name string) map[string]int {
		rc.Reset()
		rp, err := ns.PlanTableRetention(ctx, policy, name, TablePlanOptions{Now: now})
		require.NoError(t, err)
		require.Equal(t, RetentionPlanned, rp.Result)
		return opCounts(rc.Counts())
	}
	nsCost, rootCost := cost("00000000_tenant_000$t00/"), cost("root_twin")
	require.Equal(t, rootCost, nsCost)
	t.Logf("retention plan of one table (6 versions): namespaced %v, root %v", nsCost, rootCost)
}

// opCounts are a RequestCounter's counts by S3 operation.
func opCounts(counts map[string]int64) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if v > 0 {
			out[k] = int(v)
		}
	}
	return out
}
