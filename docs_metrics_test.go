package reaper_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/metrics"
)

// TestReferenceListsEveryMetric: docs/REFERENCE.md's metrics table names
// every metric reaper declares, with the labels it carries, and no other.
func TestReferenceListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("docs/REFERENCE.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Metrics\n")
	require.True(t, ok, "REFERENCE.md has a Metrics section")
	var documented []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z0-9_]+)(\\{[a-z_,]+\\})?`").FindAllStringSubmatch(first, -1) {
			documented = append(documented, "reaper_"+m[1]+m[2])
		}
	}
	var declared []string
	for _, c := range metrics.New(nil, metrics.Options{}).Collectors() {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		d := (<-ch).String()
		_, after, _ := strings.Cut(d, `fqName: "`)
		name, _, _ := strings.Cut(after, `"`)
		_, after, _ = strings.Cut(d, "variableLabels: {")
		labels, _, _ := strings.Cut(after, "}")
		if labels != "" {
			name += "{" + labels + "}"
		}
		declared = append(declared, name)
	}
	slices.Sort(documented)
	slices.Sort(declared)
	require.Equal(t, declared, documented, "REFERENCE.md's metrics table against the metrics reaper declares")
}

// TestReadmeCountsTheAlerts: the README's count of the shipped alerts is
// the PrometheusRule's.
func TestReadmeCountsTheAlerts(t *testing.T) {
	rules, err := os.ReadFile("deploy/prometheus/prometheusrule.yaml")
	require.NoError(t, err)
	n := len(regexp.MustCompile(`(?m)^\s+- alert: `).FindAll(rules, -1))
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("`deploy/prometheus` has (\\d+) alerts").FindSubmatch(readme)
	require.NotNil(t, m, "README.md says how many alerts deploy/prometheus has")
	require.Equal(t, strconv.Itoa(n), string(m[1]))
}
