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

	"github.com/lance-reaper/reaper/deploy/rules"
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

// plainRuleFile is the rule file for a Prometheus without the Operator,
// generated from prometheusrule.yaml (make rules).
var plainRuleFile = filepath.Join("prometheus", "reaper-rules.yml")

// runbookURL is where an alert's runbook_url points: its section of
// docs/RUNBOOK.md (GitHub's anchor of a heading is the heading lower-cased).
func runbookURL(alert string) string {
	return "https://github.com/lance-reaper/reaper/blob/main/docs/RUNBOOK.md#" + strings.ToLower(alert)
}

// TestPlainRuleFileIsGenerated: the plain rule file is the PrometheusRule's
// groups as `make rules` writes them (comments included), and says the same
// rules, read back by Prometheus's own parser.
func TestPlainRuleFileIsGenerated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("prometheus", "prometheusrule.yaml"))
	require.NoError(t, err)
	want, err := rules.PlainFile(src)
	require.NoError(t, err)
	got, err := os.ReadFile(plainRuleFile)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is stale: run make rules", plainRuleFile)

	plain, errs := rulefmt.Parse(got, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	fromRule, err := yaml.Marshal(struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}{loadRules(t).Spec.Groups})
	require.NoError(t, err)
	operator, errs := rulefmt.Parse(fromRule, false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	require.Len(t, plain.Groups, len(operator.Groups))
	for i, g := range operator.Groups {
		p := plain.Groups[i]
		require.Equal(t, g.Name, p.Name)
		require.Equal(t, g.Interval, p.Interval)
		require.Len(t, p.Rules, len(g.Rules))
		for j, r := range g.Rules {
			q := p.Rules[j]
			require.Equal(t, []any{r.Record, r.Alert, strings.TrimSpace(r.Expr), r.For, r.Labels, r.Annotations},
				[]any{q.Record, q.Alert, strings.TrimSpace(q.Expr), q.For, q.Labels, q.Annotations}, "group %s rule %d", g.Name, j)
		}
	}
}

// TestEveryAlertHasARunbook: each alert links its section of
// docs/RUNBOOK.md, and the runbook has a section for every alert and no
// other.
func TestEveryAlertHasARunbook(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoDir(t), "docs", "RUNBOOK.md"))
	require.NoError(t, err)
	sections := map[string]bool{}
	for l := range strings.Lines(string(doc)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "## "); ok {
			sections[name] = true
		}
	}
	alerts := map[string]bool{}
	for _, g := range loadRules(t).Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			require.Equal(t, runbookURL(r.Alert), r.Annotations["runbook_url"], "%s links its runbook section", r.Alert)
			require.True(t, sections[r.Alert], "docs/RUNBOOK.md has no section ## %s", r.Alert)
		}
	}
	for s := range sections {
		require.True(t, alerts[s], "docs/RUNBOOK.md has a section %q that is no alert", s)
	}
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
	require.Len(t, alerts, 14)
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
