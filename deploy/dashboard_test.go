package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("grafana", "reaper-dashboard.json"))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d))
	return d
}

// grafanaVars are Grafana's built-in interval variables, as a test value.
var grafanaVars = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute replaces Grafana variables the way Grafana would before the
// query reaches Prometheus: intervals by a duration, the dashboard's own
// variables by a value (an All of ".*" for the multi-value ones).
func substitute(t *testing.T, expr string, defined map[string]bool) string {
	t.Helper()
	return varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := grafanaVars[name]; ok {
			return v
		}
		require.True(t, defined[name], "%s uses undefined variable $%s", expr, name)
		return ".*"
	})
}

// TestDashboardQueriesReadRealMetrics: every panel query and variable query
// parses as PromQL once Grafana's variables are filled in, and reads
// metrics, labels and label values a real pass exports.
func TestDashboardQueriesReadRealMetrics(t *testing.T) {
	d := loadDashboard(t)
	c := newChecker(realMetrics(t))
	defined := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// label_values(<selector>, <label>): the selector is PromQL and must
		// carry the label.
		m := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`).FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q", v.Name, v.Definition)
		sel := substitute(t, m[1], defined)
		_, err := c.check(sel)
		require.NoError(t, err, "variable %s", v.Name)
		_, err = c.check("count by (" + m[2] + ") (" + sel + ")")
		require.NoError(t, err, "variable %s: label %s", v.Name, m[2])
		require.Equal(t, ".*", v.AllValue, "variable %s: All must match series without the label", v.Name)
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		for _, tg := range p.Targets {
			expr := substitute(t, tg.Expr, defined)
			names, err := c.check(expr)
			require.NoError(t, err, "panel %q (%s): %s", p.Title, tg.RefID, tg.Expr)
			require.NotEmpty(t, names, "panel %q reads no metric", p.Title)
		}
	}
	// The dashboard shows every reaper family a pass exports, but
	// reaper_build_info: a constant 1 whose labels name the build, read by
	// joins and ad-hoc queries, not a signal to plot.
	var missing []string
	for _, n := range c.e.reaperNames() {
		if !c.used[n] && n != "reaper_build_info" {
			missing = append(missing, n)
		}
	}
	require.Empty(t, missing, "reaper exports families no panel shows")
}

// TestDashboardLayout: a Grafana dashboard that imports cleanly: panel ids
// unique, panels inside the 24-column grid and not overlapping, every query
// panel on the selectable Prometheus data source, refIds unique per panel.
func TestDashboardLayout(t *testing.T) {
	d := loadDashboard(t)
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)
	var names []string
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
	}
	require.Equal(t, []string{"datasource", "namespace", "job", "root"}, names)

	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	var rows []string
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.Contains(t, []string{"row", "stat", "timeseries"}, p.Type, p.Title)
		g := p.GridPos
		require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q gridPos %+v", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				require.Empty(t, taken[cell{x, y}], "panel %q overlaps %q", p.Title, taken[cell{x, y}])
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		require.Equal(t, map[string]any{"type": "prometheus", "uid": "${datasource}"}, p.Datasource, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			require.False(t, refs[tg.RefID], "panel %q: refId %s twice", p.Title, tg.RefID)
			refs[tg.RefID] = true
			require.NotEmpty(t, strings.TrimSpace(tg.Expr))
		}
	}
	require.True(t, slices.Equal([]string{"Passes", "Backlog and lag", "Reclaimed", "Failures", "Object store", "Version retention"}, rows), "rows: %v", rows)
}
