package worker

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
)

// A pass cleans the tables in LanceDB namespaces as it cleans root tables,
// with the retention each namespace entry of the root's configuration
// gives them (on for tenant_*, off for staging, root tables off), reports,
// logs and writes them to the ledger by their object id, counts them in
// the metrics and in the blast radius, and never touches the catalog.
func TestPassCoversNamespacedTables(t *testing.T) {
	for _, kind := range []Kind{PurgeAndRetain, RetainOnly} {
		t.Run(map[Kind]string{PurgeAndRetain: "purge", RetainOnly: "retain"}[kind], func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			s := f.store(0)
			for _, dir := range []string{"top.lance/", "76cba2fc_tenant_a$inner/", "f9500c33_tenant_a$sub$deep/", "0a1b2c3d_tenant_b$x/", "11111111_staging$y/"} {
				lancetest.LanceDB(t, s, dir)
			}
			catalog := lancetest.LanceDB(t, s, "__manifest/")
			audit := objstoretest.Local.NewRoot(t).Open(t)
			reg := prometheus.NewRegistry()

			on, off := true, false
			cfg := retentionOn()
			own := config.RetentionOverride{Enabled: &off, Namespaces: []config.NamespaceRetention{
				{Match: "staging", Enabled: &off}, {Match: "tenant_*", Enabled: &on},
			}}
			w := f.worker(cfg, 2*time.Hour)
			w.Kind = kind
			w.Roots = func(context.Context) ([]roots.Root, error) {
				return []roots.Root{{URI: f.uris[0], Retention: own}}, nil
			}
			w.Ledger = testLedger(audit)
			w.Observer = Observers{f.rec, MetricsObserver{M: metrics.New(reg, metrics.Options{})}}
			rep, err := w.Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, map[string]string{
				"76cba2fc_tenant_a$inner/": "cleaned/old_versions", "f9500c33_tenant_a$sub$deep/": "cleaned/old_versions",
				"0a1b2c3d_tenant_b$x/": "cleaned/old_versions",
			}, retained(rep, 0))
			require.Equal(t, 5, rep.Roots[0].Plan.Live, "every table of the root counts toward the blast radius")
			require.Equal(t, 3.0, counterValue(t, reg, "reaper_retention_tables_total", "cleaned"))

			rows := ledgerRowsOf(t, audit)
			for id, dir := range map[string]string{"tenant_a$inner": "76cba2fc_tenant_a$inner/", "tenant_a$sub$deep": "f9500c33_tenant_a$sub$deep/", "tenant_b$x": "0a1b2c3d_tenant_b$x/"} {
				require.Equal(t, "cleaned", rows[rep.PassID+"/"+id].Action, id)
				require.Equal(t, dir, rows[rep.PassID+"/"+id].Location, id)
			}
			for _, dir := range []string{"76cba2fc_tenant_a$inner/", "f9500c33_tenant_a$sub$deep/"} {
				requireTableReads(t, s, dir)
				require.Empty(t, f.keys(0, lifecycle.RetainKey(dir)))
				require.Empty(t, f.keys(0, lifecycle.LockKey(dir)))
			}
			require.Equal(t, catalog, f.keys(0, "__manifest/"), "the catalog is never touched")
			tb := requireTableReads(t, s, "11111111_staging$y/")
			require.Len(t, tb.Versions, 6, "staging is off")
		})
	}
}
