package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// promParser parses PromQL as Prometheus does by default.
var promParser = parser.NewParser(parser.Options{})

// targetLabels are added by Prometheus when it scrapes reaper through a
// ServiceMonitor (or the Pushgateway, for job and instance); reaper does not
// export them.
// shard is the Pushgateway grouping label of a sharded CronJob's pushes.
var targetLabels = []string{"namespace", "job", "instance", "pod", "service", "endpoint", "container", "shard"}

// pushgatewayMetrics are the Pushgateway's own series about each pushed
// group, which the rules read to tell pushed counters from scraped ones.
var pushgatewayMetrics = []string{"push_time_seconds", "push_failure_time_seconds"}

// openLabels take values reaper does not create up front (root URIs, HTTP
// status codes, S3 operations seen on the wire): any value matches.
var openLabels = map[string][]string{
	"":                                 {"root"},
	"reaper_s3_http_requests_total":    {"code", "operation"},
	"reaper_store_http_requests_total": {"backend", "code", "operation"},
}

func isOpen(family, label string) bool {
	return slices.Contains(openLabels[""], label) || slices.Contains(openLabels[family], label)
}

// labelSet maps label names to the values they can take; a nil value set
// means any value.
type labelSet map[string]map[string]bool

func (s labelSet) names() []string { return slices.Sorted(maps.Keys(s)) }

// checker checks PromQL expressions against the metrics a real pass exports
// and the recording rules defined beside them.
type checker struct {
	e        exported
	recorded map[string]labelSet
	used     map[string]bool // reaper families and recording rules read
}

func newChecker(e exported) *checker {
	return &checker{e: e, recorded: map[string]labelSet{}, used: map[string]bool{}}
}

// family resolves a selected metric name to the family reaper exports: the
// name itself, or a histogram's _bucket, _sum or _count series.
func (c *checker) family(name string) (string, bool) {
	if c.e[name] != nil {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok || c.e[base] == nil {
			continue
		}
		if t := c.e[base].GetType(); t == dto.MetricType_HISTOGRAM || t == dto.MetricType_SUMMARY {
			return base, suffix != "_bucket" || t == dto.MetricType_HISTOGRAM
		}
	}
	return "", false
}

// selectorLabels are the labels (with their values) of the series a
// selector reads, target labels included.
func (c *checker) selectorLabels(name string) (labelSet, error) {
	if ls, ok := c.recorded[name]; ok {
		return ls, nil
	}
	if slices.Contains(pushgatewayMetrics, name) {
		ls := labelSet{}
		for _, l := range targetLabels {
			ls[l] = nil
		}
		return ls, nil
	}
	fam, ok := c.family(name)
	if !ok {
		return nil, fmt.Errorf("metric %s: reaper does not export it (a real pass exports %s)", name, strings.Join(c.e.reaperNames(), ", "))
	}
	ls := labelSet{}
	for _, m := range c.e[fam].GetMetric() {
		for _, lp := range m.GetLabel() {
			if isOpen(fam, lp.GetName()) {
				ls[lp.GetName()] = nil
				continue
			}
			if ls[lp.GetName()] == nil {
				ls[lp.GetName()] = map[string]bool{}
			}
			ls[lp.GetName()][lp.GetValue()] = true
		}
	}
	if strings.HasSuffix(name, "_bucket") && fam != name {
		ls["le"] = nil
	}
	for _, l := range targetLabels {
		ls[l] = nil
	}
	return ls, nil
}

// outLabels are the labels of the series an expression returns.
func (c *checker) outLabels(n parser.Node) (labelSet, error) {
	switch n := n.(type) {
	case *parser.ParenExpr:
		return c.outLabels(n.Expr)
	case *parser.StepInvariantExpr:
		return c.outLabels(n.Expr)
	case *parser.SubqueryExpr:
		return c.outLabels(n.Expr)
	case *parser.MatrixSelector:
		return c.outLabels(n.VectorSelector)
	case *parser.VectorSelector:
		return c.selectorLabels(n.Name)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return labelSet{}, nil
	case *parser.UnaryExpr:
		return c.outLabels(n.Expr)
	case *parser.AggregateExpr:
		in, err := c.outLabels(n.Expr)
		if err != nil {
			return nil, err
		}
		out := labelSet{}
		if n.Without {
			maps.Copy(out, in)
			for _, g := range n.Grouping {
				delete(out, g)
			}
			return out, nil
		}
		for _, g := range n.Grouping {
			vals, ok := in[g]
			if !ok {
				return nil, fmt.Errorf("%s by (%s): no series it aggregates has label %q (they have %s)",
					n.Op, strings.Join(n.Grouping, ", "), g, strings.Join(in.names(), ", "))
			}
			out[g] = vals
		}
		return out, nil
	case *parser.BinaryExpr:
		lhs, err := c.outLabels(n.LHS)
		if err != nil {
			return nil, err
		}
		rhs, err := c.outLabels(n.RHS)
		if err != nil {
			return nil, err
		}
		if n.LHS.Type() == parser.ValueTypeScalar {
			return rhs, nil
		}
		return lhs, nil
	case *parser.Call:
		var out labelSet
		for _, a := range n.Args {
			ls, err := c.outLabels(a)
			if err != nil {
				return nil, err
			}
			if out == nil && a.Type() != parser.ValueTypeScalar && a.Type() != parser.ValueTypeString {
				out = ls
			}
		}
		if out == nil {
			out = labelSet{}
		}
		if n.Func.Name == "histogram_quantile" {
			if _, ok := out["le"]; !ok {
				return nil, fmt.Errorf("histogram_quantile over series without le: %s", n)
			}
			out = maps.Clone(out)
			delete(out, "le")
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected PromQL node %T", n)
}

// check parses expr and checks every metric it reads, every label it
// matches or groups by, and every label value it matches exactly. It
// returns the names read (reaper families and recording rules).
func (c *checker) check(expr string) ([]string, error) {
	e, err := promParser.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	var names []string
	var errs []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := n.Name
			if name == "" {
				errs = append(errs, "a selector without a metric name: "+n.String())
				return nil
			}
			ls, err := c.selectorLabels(name)
			if err != nil {
				errs = append(errs, err.Error())
				return nil
			}
			if _, ok := c.recorded[name]; ok {
				names = append(names, name)
			} else if slices.Contains(pushgatewayMetrics, name) {
				// the Pushgateway's, not reaper's
			} else {
				fam, _ := c.family(name)
				names = append(names, fam)
			}
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName {
					continue
				}
				vals, ok := ls[m.Name]
				if !ok {
					errs = append(errs, fmt.Sprintf("%s: no label %q (it has %s)", name, m.Name, strings.Join(ls.names(), ", ")))
					continue
				}
				if m.Type == labels.MatchEqual && m.Value != "" && vals != nil && !vals[m.Value] {
					errs = append(errs, fmt.Sprintf("%s{%s=%q}: reaper exports %s only with %s", name, m.Name, m.Value, m.Name,
						strings.Join(slices.Sorted(maps.Keys(vals)), ", ")))
				}
			}
		case *parser.AggregateExpr:
			if _, err := c.outLabels(n); err != nil {
				errs = append(errs, err.Error())
			}
		case *parser.Call:
			if n.Func.Name == "histogram_quantile" {
				if _, err := c.outLabels(n); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
		return nil
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	for _, n := range names {
		c.used[n] = true
	}
	return names, nil
}

// record registers a recording rule: later expressions may read it.
func (c *checker) record(name, expr string) error {
	if _, err := c.check(expr); err != nil {
		return err
	}
	e, err := promParser.ParseExpr(expr)
	if err != nil {
		return err
	}
	ls, err := c.outLabels(e)
	if err != nil {
		return err
	}
	c.recorded[name] = ls
	return nil
}

// TestCheckerCatchesMistakes: the checker refuses what the rules and the
// dashboard must not contain.
func TestCheckerCatchesMistakes(t *testing.T) {
	c := newChecker(realMetrics(t))
	for expr, want := range map[string]string{
		`reaper_passes_total{result="success"}`:                       "",
		`sum by (le) (rate(reaper_pass_duration_seconds_bucket[5m]))`: "",
		`sum by (namespace, state) (reaper_tables{state="overdue"})`:  "",
		`reaper_pass_duration_seconds_count`:                          "",
		`reaper_purges_total`:                                         "does not export",
		`reaper_passes_total{result="succeeded"}`:                     "only with",
		`reaper_tables{status="overdue"}`:                             `no label "status"`,
		`sum by (reason) (reaper_tables)`:                             `no series it aggregates has label "reason"`,
		`sum by (le) (rate(reaper_tables_purged_total_bucket[5m]))`:   "does not export",
		`rate(reaper_passes_total[5m]`:                                "parse",
		`{__name__=~"reaper_.*"}`:                                     "without a metric name",
		`histogram_quantile(0.9, sum by (op) (rate(reaper_objstore_request_duration_seconds_bucket[5m])))`: "without le",
	} {
		_, err := c.check(expr)
		if want == "" {
			require.NoError(t, err, expr)
		} else {
			require.ErrorContains(t, err, want, expr)
		}
	}
}
