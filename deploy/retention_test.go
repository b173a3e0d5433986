package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// seriesOf is the value of family's series whose labels include want.
func seriesOf(t *testing.T, e exported, family string, want map[string]string) float64 {
	t.Helper()
	mf := e[family]
	require.NotNil(t, mf, "%s not exported", family)
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		if mf.GetType() == dto.MetricType_GAUGE {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	require.Failf(t, "no series", "%s%v", family, want)
	return 0
}

// TestRetentionMetricsPerRoot: two roots of tables LanceDB 0.39 wrote
// (`reaper demo`), version retention on both, one of them keeping 30 days.
// A dry run's textfile (promtool checks it) shows what old versions cost
// in each root; then the daemon's scrape shows which root retention
// cleaned (the counters by root) and what it left (the backlog, now zero),
// and its "pass finished" and "root finished" lines count the same.
func TestRetentionMetricsPerRoot(t *testing.T) {
	dir := t.TempDir()
	for _, r := range []string{"a", "b"} {
		res := runReaper(t, nil, "demo", "--dir", filepath.Join(dir, r))
		require.Equal(t, 0, res.code, "demo: %s", res)
	}
	a, b := filepath.Join(dir, "a", "db"), filepath.Join(dir, "b", "db")
	rootA, rootB := "file://"+a, "file://"+b
	cfg := filepath.Join(dir, "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`log: {format: text}
safety: {allow_short_ttl: true}
retention: {enabled: true, older_than: 1s}
roots:
  - uri: %s
  - uri: %s
    retention: {older_than: 30d}
`, a, b)), 0o644))
	// Every version but the newest older than a second by the store's
	// clock (a local root's: the files' times).
	time.Sleep(1500 * time.Millisecond)

	prom := filepath.Join(dir, "dry.prom")
	res := runReaper(t, nil, "purge", "--config", cfg, "--dry-run", "--textfile", prom)
	require.Equal(t, 0, res.code, "dry run: %s", res)
	text, err := os.ReadFile(prom)
	require.NoError(t, err)
	checkMetrics(t, "the dry run's textfile", string(text))
	dry := readTextfile(t, prom)
	costA := seriesOf(t, dry, "reaper_retention_reclaimable_bytes", map[string]string{"root": rootA})
	require.Positive(t, costA, "what old versions cost in a, before")
	require.Equal(t, 3.0, seriesOf(t, dry, "reaper_retention_reclaimable_versions", map[string]string{"root": rootA}),
		"customers' 2 old versions and orders' 1")
	require.Zero(t, seriesOf(t, dry, "reaper_retention_reclaimable_bytes", map[string]string{"root": rootB}))
	require.Zero(t, seriesOf(t, dry, "reaper_retention_versions_removed_total", map[string]string{"root": rootA}), "a dry run removes nothing")

	// The daemon, scraped as Prometheus scrapes it.
	body, logs := daemonFirstScrape(t, "--config", cfg)
	checkMetrics(t, "the daemon's /metrics", body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	e := exported(fams)
	require.Equal(t, 3.0, seriesOf(t, e, "reaper_retention_versions_removed_total", map[string]string{"root": rootA}))
	require.Equal(t, costA, seriesOf(t, e, "reaper_retention_bytes_reclaimed_total", map[string]string{"root": rootA}))
	require.Equal(t, 2.0, seriesOf(t, e, "reaper_retention_tables_total", map[string]string{"root": rootA, "result": "cleaned"}))
	require.Zero(t, seriesOf(t, e, "reaper_retention_versions_removed_total", map[string]string{"root": rootB}))
	require.Equal(t, 2.0, seriesOf(t, e, "reaper_retention_tables_total", map[string]string{"root": rootB, "result": "nothing_to_do"}))
	require.Zero(t, seriesOf(t, e, "reaper_retention_reclaimable_bytes", map[string]string{"root": rootA}), "what old versions cost in a, after")

	require.Regexp(t, regexp.MustCompile(`msg="pass finished" pass_id=\S+ result=success purged=0 objects=0 bytes=0 skipped=\d+ failed=0 tables_cleaned=2 versions_removed=3 retention_objects=\d+ retention_bytes=`+
		fmt.Sprint(int64(costA))+` retention_failed=0 `), logs)
	require.Regexp(t, regexp.MustCompile(`msg="root finished" pass_id=\S+ root=`+regexp.QuoteMeta(rootA)+` purged=0 objects=0 bytes=0 skipped=\d+ failed=0 tables_cleaned=2 versions_removed=3 .* reclaimable_versions=0 reclaimable_bytes=0 `), logs)
}
