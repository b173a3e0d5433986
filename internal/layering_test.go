package internal_test

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// This test owns the layering rule: a package may import packages of its
// own layer or a lower one, never a higher one, so the store never learns
// about tables, the table lifecycle never learns about configuration,
// passes and schedules, and nothing below the CLI learns about the CLI. Test-support
// packages may import any production package but only tests may import
// them. A new package goes into layers (or testSupport) here, or this test
// fails.

const module = "github.com/lance-reaper/reaper"

// layers maps a package, or a folder ending in "/" for everything under
// it, to its layer; the longest match wins.
var layers = map[string]int{
	// 0: object storage: the Store interface, its backends and wrappers.
	"internal/objstore":  0,
	"internal/objstore/": 0,
	"model":              0, // the spin model of PROTOCOL.md; imports nothing
	// The outcome vocabulary (actions, reasons, results) imports nothing.
	"internal/outcome": 0,
	// Log attributes carried in a context imports nothing.
	"internal/logctx": 0,

	// 1: services over a store: the lease, metrics and tracing.
	"internal/lock":    1,
	"internal/metrics": 1,
	// The one store stack composes a backend with retries (layer 0) and
	// metrics and tracing (layer 1), so it sits with the latter, outside
	// internal/objstore/, whose folders are all layer 0.
	"internal/stack": 1,
	// Lance's format (a table's versions and the files each references) and
	// the retention plan over it: files and bytes of one table, nothing of
	// reaper's lifecycle, so that lifecycle and the CLI can both use them.
	"internal/lance":     1,
	"internal/retention": 1,
	// The files of a fake Lance table, for the bench and the tests: their
	// keys and bodies, from the standard library alone, so a program may
	// import it where it may not import test support.
	"internal/faketable": 1,

	// 2: the table lifecycle.
	"internal/lifecycle": 2,

	// 3: configuration (it reads the defaults of the layers below), the
	// roots it names and the audit ledger (they ask lifecycle where tables
	// are).
	"internal/config": 3,
	"internal/roots":  3,
	"internal/ledger": 3,

	// 4: passes: the worker, the scheduler and the daemon around them.
	"internal/worker":    4,
	"internal/scheduler": 4,
	"internal/daemon":    4,
	// The one assembly of a pass (store stack, roots, observers, ledger)
	// for the CLI and the public API alike.
	"internal/assembly": 4,

	// 5: the public package.
	"": 5,

	// 6: programs.
	"cmd/":  6,
	"bench": 6,
	// The bench's S3 floor imports the SDK only, no reaper package.
	"bench/floor": 6,

	// 7: end-to-end test suites.
	"test/": 7,
}

// testSupport are the packages only tests may import.
var testSupport = map[string]bool{
	"internal/objstore/objstoretest": true,
	// The in-memory store: tests only, so no pass can run on it by mistake.
	"internal/objstore/objstoretest/memstore": true,
	"internal/clocktest":                      true,
	"internal/lancetest":                      true,
	// Node scripts of the interop suite as JSON-lines servers.
	"internal/nodetest": true,
}

// testSupportLayer is where test-support packages sit: above every internal
// package they help test, below the public package and the programs.
const testSupportLayer = 4

// layerOf returns pkg's layer (pkg relative to the module, "" for the
// module's root package) and whether the table knows it.
func layerOf(pkg string) (int, bool) {
	if testSupport[pkg] {
		return testSupportLayer, true
	}
	best, layer, found := -1, 0, false
	for prefix, l := range layers {
		match := pkg == prefix || (strings.HasSuffix(prefix, "/") && strings.HasPrefix(pkg, prefix))
		if match && len(prefix) > best {
			best, layer, found = len(prefix), l, true
		}
	}
	return layer, found
}

// violations lists every import in graph (package -> its non-test imports,
// module-relative) that breaks the layering.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		from, ok := layerOf(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("%q has no layer: add it to layers in internal/layering_test.go", pkg))
			continue
		}
		for _, imp := range imports {
			to, ok := layerOf(imp)
			switch {
			case !ok:
				continue // reported as a package of its own
			case testSupport[imp] && !testSupport[pkg]:
				out = append(out, fmt.Sprintf("%q imports test-support package %q", pkg, imp))
			case to > from:
				out = append(out, fmt.Sprintf("%q (layer %d) imports %q (layer %d)", pkg, from, imp, to))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestViolationsFindsUpwardImports(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  int
	}{
		{"downward imports are fine", map[string][]string{
			"cmd/reaper":         {"", "internal/worker", "internal/objstore/all"},
			"internal/worker":    {"internal/lifecycle", "internal/config"},
			"internal/lifecycle": {"internal/lock", "internal/objstore"},
			"internal/lock":      {"internal/objstore"},
		}, 0},
		{"same layer is fine", map[string][]string{"internal/objstore/all": {"internal/objstore/s3"}}, 0},
		{"objstore imports lifecycle", map[string][]string{"internal/objstore/s3": {"internal/lifecycle"}}, 1},
		{"objstore imports config", map[string][]string{"internal/objstore": {"internal/config"}}, 1},
		{"a store wrapper under objstore/ imports metrics", map[string][]string{"internal/objstore/stack": {"internal/metrics"}}, 1},
		{"the store stack imports metrics", map[string][]string{"internal/stack": {"internal/metrics", "internal/objstore/retry"}}, 0},
		{"lifecycle imports worker", map[string][]string{"internal/lifecycle": {"internal/worker"}}, 1},
		{"lifecycle imports scheduler", map[string][]string{"internal/lifecycle": {"internal/scheduler"}}, 1},
		{"lifecycle imports config", map[string][]string{"internal/lifecycle": {"internal/config"}}, 1},
		{"config reads lifecycle's defaults", map[string][]string{"internal/config": {"internal/lifecycle", "internal/objstore/retry"}}, 0},
		{"internal imports cmd", map[string][]string{"internal/worker": {"cmd/reaper"}}, 1},
		{"internal imports the public package", map[string][]string{"internal/worker": {""}}, 1},
		{"production imports objstoretest", map[string][]string{"internal/lock": {"internal/objstore/objstoretest"}}, 1},
		{"production imports the memory store", map[string][]string{"internal/objstore/retry": {"internal/objstore/objstoretest/memstore"}}, 1},
		{"the CLI imports the fake clock", map[string][]string{"cmd/reaper": {"internal/clocktest"}}, 1},
		{"test support imports production", map[string][]string{"internal/clocktest": {"internal/scheduler"}}, 0},
		{"unknown package", map[string][]string{"internal/newthing": {"internal/objstore"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, violations(tc.graph), tc.want, "%v", violations(tc.graph))
		})
	}
}

// TestLayering checks the real import graph (go list, non-test imports).
func TestLayering(t *testing.T) {
	trackSources(t)
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	require.NoError(t, err, "go list")
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := rel(fields[0])
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				graph[pkg] = append(graph[pkg], rel(imp))
			}
		}
	}
	require.Contains(t, graph, "internal/objstore", "go list found the module's packages")
	delete(graph, "internal") // this test's own package
	require.Empty(t, violations(graph))
}

// trackSources opens every directory of the module: go test's result
// cache records each directory it opens with the names and modification
// times of its files, so a changed import anywhere re-runs this test
// (make test does not pass -count=1). go list's own reads are invisible to
// the cache.
func trackSources(t *testing.T) {
	t.Helper()
	require.NoError(t, walkSources("..", nil, func(string) error { return nil }))
}

// rel is an import path relative to the module ("" for its root package).
func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}
