package deploy

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// loadRules decodes deploy/prometheus/prometheusrule.yaml strictly into the
// Prometheus Operator's type.
func loadRules(t *testing.T) *monitoringv1.PrometheusRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("prometheus", "prometheusrule.yaml"))
	require.NoError(t, err)
	o, err := decodeStrict(data)
	require.NoError(t, err)
	r, ok := o.obj.(*monitoringv1.PrometheusRule)
	require.True(t, ok, "prometheusrule.yaml holds a %s", o.kind)
	return r
}

// TestRulesArePrometheusRules: the groups load as a Prometheus rule file
// (what promtool check rules does: unknown fields, expressions, durations,
// label and annotation templates), with the alerting conventions kept.
func TestRulesArePrometheusRules(t *testing.T) {
	r := loadRules(t)
	data, err := yaml.Marshal(struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}{r.Spec.Groups})
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "rule file:\n%s", data)
	require.Len(t, groups.Groups, 2)

	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" {
				require.Regexp(t, `^[a-z_]+:reaper_[a-z0-9_]+:[a-z0-9_]+$`, rule.Record, "level:metric:operations")
				continue
			}
			require.False(t, alerts[rule.Alert], "alert %s defined twice", rule.Alert)
			alerts[rule.Alert] = true
			require.Regexp(t, `^Reaper[A-Z]\w+$`, rule.Alert)
			require.Contains(t, []string{"critical", "warning", "info"}, rule.Labels["severity"], rule.Alert)
			require.NotEmpty(t, rule.Annotations["summary"], rule.Alert)
			require.NotEmpty(t, rule.Annotations["description"], rule.Alert)
			require.Positive(t, rule.For, "%s: an alert waits before firing", rule.Alert)
		}
	}
	require.Len(t, alerts, 12)
}

// TestRulesReadRealMetrics: every metric the rules read is one a real pass
// exports, with the labels and label values they match.
func TestRulesReadRealMetrics(t *testing.T) {
	c := newChecker(realMetrics(t))
	for _, g := range loadRules(t).Spec.Groups {
		for _, rule := range g.Rules {
			expr := rule.Expr.String()
			if rule.Record != "" {
				require.NoError(t, c.record(rule.Record, expr), "record %s: %s", rule.Record, expr)
				continue
			}
			names, err := c.check(expr)
			require.NoError(t, err, "alert %s: %s", rule.Alert, expr)
			require.NotEmpty(t, names, "alert %s reads no metric", rule.Alert)
		}
	}
	var raw []string
	for n := range c.used {
		if !strings.Contains(n, ":") {
			raw = append(raw, n)
		}
	}
	slices.Sort(raw)
	t.Logf("the rules read %s", strings.Join(raw, ", "))
	for _, want := range []string{
		"reaper_last_success_timestamp_seconds", "reaper_tables", "reaper_oldest_due_marker_timestamp_seconds",
		"reaper_purge_failures_total", "reaper_purge_conflicts_total", "reaper_roots_refused_total",
		"reaper_lock_acquisitions_total", "reaper_ledger_write_failures_total",
	} {
		require.Contains(t, raw, want)
	}
	for name := range c.recorded {
		require.True(t, c.used[name], "recording rule %s is not used by any alert", name)
	}
}

// TestNoSuccessAlertIsTwiceTheSchedule: ReaperNoRecentSuccess fires after
// twice reaper.yaml's schedule (which the CronJobs follow) without a
// successful pass.
func TestNoSuccessAlertIsTwiceTheSchedule(t *testing.T) {
	period := schedulePeriod(t, loadReaperConfig(t).Schedule)
	var expr string
	records := map[string]string{}
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r.Expr.String()
			}
			if r.Alert == "ReaperNoRecentSuccess" {
				expr = r.Expr.String()
			}
		}
	}
	require.NotEmpty(t, expr)
	e, err := promParser.ParseExpr(expr)
	require.NoError(t, err)
	b, ok := e.(*parser.BinaryExpr)
	require.True(t, ok, "<seconds since the last success> > <threshold>: %s", expr)
	require.Equal(t, parser.ItemType(parser.GTR), b.Op)
	n, ok := b.RHS.(*parser.NumberLiteral)
	require.True(t, ok, expr)
	require.Equal(t, 2*period, time.Duration(n.Val)*time.Second, "threshold vs schedule %s", loadReaperConfig(t).Schedule)
	vs, ok := b.LHS.(*parser.VectorSelector)
	require.True(t, ok, expr)
	require.Contains(t, records[vs.Name], "time() - max by (namespace, job, instance, shard) (reaper_last_success_timestamp_seconds)")
}
