// Package rules renders reaper's PrometheusRule (deploy/prometheus/
// prometheusrule.yaml, the one source of its recording rules and alerts)
// as a plain Prometheus rule file, for a Prometheus without the Operator:
// the rule groups with their comments, out of the Kubernetes object.
// cmd/reaper-rules writes it (`make rules`); deploy's tests check that the
// committed file is what it writes.
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Header opens the plain rule file.
const Header = `# reaper's recording rules and alerts as a plain Prometheus rule file: list it under rule_files in
# prometheus.yml. Generated from prometheusrule.yaml (the PrometheusRule for the Prometheus
# Operator) by 'make rules' (deploy/cmd/reaper-rules): edit that file, not this one.
# docs/RUNBOOK.md says what each alert means and what to do.
`

// PlainFile returns the rule file of a PrometheusRule manifest: Header,
// then its spec's lines (the groups and their comments) moved out by one
// indentation level. The manifest's spec must hold nothing but groups.
func PlainFile(promRule []byte) ([]byte, error) {
	_, spec, ok := bytes.Cut(promRule, []byte("\nspec:\n"))
	if !ok {
		return nil, errors.New("prometheus rule: no top-level spec")
	}
	var out bytes.Buffer
	out.WriteString(Header)
	for i, line := range strings.Split(strings.TrimRight(string(spec), "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "  ")
		switch {
		case line == "":
		case !ok:
			return nil, fmt.Errorf("prometheus rule: spec line %d is not indented: %q", i+1, line)
		case i == 0 && rest != "groups:":
			return nil, fmt.Errorf("prometheus rule: spec starts with %q, want groups:", rest)
		case !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "#") && rest != "groups:":
			return nil, fmt.Errorf("prometheus rule: spec holds %q besides groups", rest)
		}
		out.WriteString(rest)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}
