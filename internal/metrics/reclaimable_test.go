package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// A root's reclaimable gauges are what its last retention plan would
// remove, replaced by the next plan; without per-root labels they are the
// sums over the roots; a forgotten root takes its series (or its share)
// away, and a reset takes them all until the next plan.
func TestReclaimable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		perRoot bool
		want    string
		// afterForget is the exposition once root a is forgotten.
		afterForget string
	}{
		{true, `
reaper_retention_reclaimable_bytes{root="s3://b/a"} 1000
reaper_retention_reclaimable_bytes{root="s3://b/b"} 24
reaper_retention_reclaimable_versions{root="s3://b/a"} 7
reaper_retention_reclaimable_versions{root="s3://b/b"} 1
`, `
reaper_retention_reclaimable_bytes{root="s3://b/b"} 24
reaper_retention_reclaimable_versions{root="s3://b/b"} 1
`},
		{false, `
reaper_retention_reclaimable_bytes{root=""} 1024
reaper_retention_reclaimable_versions{root=""} 8
`, `
reaper_retention_reclaimable_bytes{root=""} 24
reaper_retention_reclaimable_versions{root=""} 1
`},
	} {
		reg := prometheus.NewPedanticRegistry()
		m := New(reg, Options{PerRootLabels: tc.perRoot})
		// A first plan of a, replaced by the next: a gauge, not a sum.
		m.SetReclaimable("s3://b/a", Reclaimable{Bytes: 5, Versions: 5})
		m.SetReclaimable("s3://b/a", Reclaimable{Bytes: 1000, Versions: 7})
		m.SetReclaimable("s3://b/b", Reclaimable{Bytes: 24, Versions: 1})
		names := []string{"reaper_retention_reclaimable_bytes", "reaper_retention_reclaimable_versions"}
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expo(tc.want)), names...), "perRoot=%t", tc.perRoot)
		m.ForgetRoot("s3://b/a")
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expo(tc.afterForget)), names...), "perRoot=%t after forget", tc.perRoot)
		m.ResetRootTables()
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(""), names...), "perRoot=%t after reset", tc.perRoot)
	}
}

// expo adds the HELP and TYPE lines of the reclaimable gauges to samples.
func expo(samples string) string {
	var b strings.Builder
	for _, g := range []struct{ name, help string }{
		{"reaper_retention_reclaimable_bytes", helpReclaimableBytes},
		{"reaper_retention_reclaimable_versions", helpReclaimableVersions},
	} {
		var lines []string
		for _, l := range strings.Split(samples, "\n") {
			if strings.HasPrefix(l, g.name+"{") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			b.WriteString("# HELP " + g.name + " " + g.help + "\n# TYPE " + g.name + " gauge\n" + strings.Join(lines, "\n") + "\n")
		}
	}
	return b.String()
}
