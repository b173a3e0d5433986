package internal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// This test owns the fuzz build rule. `go test -fuzz` instruments every
// package its test binary links, the standard library included, and make
// test's fuzz step builds that binary cold on a fresh machine. The fuzz
// targets therefore sit in packages whose test binary, built with the
// Makefile's FUZZ_TAGS, links the parser and little else: test files that
// bring the conformance harness carry `//go:build !fuzzonly`, and the S3
// and GCS option parsers live apart from their SDKs (s3opt, gcsopt).

// heavyForFuzz are what the fuzz build must not link: the harness and,
// through it, every backend's SDK and the ledger's arrow.
var heavyForFuzz = []string{
	module + "/internal/objstore/objstoretest",
	module + "/internal/lancetest",
	module + "/internal/ledger",
	"github.com/apache/arrow-go/",
	"github.com/aws/",
	"github.com/Azure/",
	"google.golang.org/api/",
	"google.golang.org/grpc",
}

func TestFuzzBuildStaysSmall(t *testing.T) {
	trackSources(t)
	targets, tags := fuzzTargets(t)
	var pkgs []string
	for _, tg := range targets {
		if !slices.Contains(pkgs, tg.pkg) {
			pkgs = append(pkgs, tg.pkg)
		}
	}

	// Each target is declared in a test file the tagged build compiles.
	cmd := exec.Command("go", append([]string{"list", "-tags", tags, "-f", `{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}`}, pkgs...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v", pkgs)
	testFiles := map[string][]string{} // package -> its test files' paths
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 2, "go list line %q", line)
		for _, f := range fields[2:] {
			testFiles[fields[0]] = append(testFiles[fields[0]], filepath.Join(fields[1], f))
		}
	}
	for _, tg := range targets {
		found := false
		for _, path := range testFiles[tg.pkg] {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			found = found || strings.Contains(string(src), "\nfunc "+tg.name+"(f *testing.F)")
		}
		require.True(t, found, "FUZZ_TARGETS names %s in %s, but no test file built with -tags %s declares it", tg.name, tg.pkg, tags)
	}

	cmd = exec.Command("go", append([]string{"list", "-tags", tags, "-deps", "-test"}, pkgs...)...)
	cmd.Dir = ".."
	out, err = cmd.Output()
	require.NoError(t, err, "go list -deps -test %v", pkgs)
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, h := range heavyForFuzz {
			require.False(t, strings.HasPrefix(d, h), "the fuzz build of %v links %s: tag the test file that brings it `//go:build !%s`, or move the parser away from it", pkgs, d, tags)
		}
	}
	// About 230 today, most of them the standard library; 730 before.
	require.Less(t, len(deps), 300, "the fuzz build of %v links %d packages", pkgs, len(deps))
}

type fuzzTarget struct{ pkg, name string }

// fuzzTargets reads FUZZ_TARGETS (./pkg:FuzzName, continued lines) and
// FUZZ_TAGS from the Makefile, the list make fuzz runs.
func fuzzTargets(t *testing.T) ([]fuzzTarget, string) {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(mk), "\\\n", " ")
	list := regexp.MustCompile(`(?m)^FUZZ_TARGETS\s*:=(.*)$`).FindStringSubmatch(text)
	require.NotNil(t, list, "FUZZ_TARGETS in the Makefile")
	tags := regexp.MustCompile(`(?m)^FUZZ_TAGS\s*:=\s*(\S+)\s*$`).FindStringSubmatch(text)
	require.NotNil(t, tags, "FUZZ_TAGS in the Makefile")
	var targets []fuzzTarget
	for _, f := range strings.Fields(list[1]) {
		pkg, name, ok := strings.Cut(f, ":")
		require.True(t, ok, "FUZZ_TARGETS entry %q is not ./pkg:FuzzName", f)
		targets = append(targets, fuzzTarget{module + strings.TrimPrefix(pkg, "."), name})
	}
	require.NotEmpty(t, targets)
	return targets, tags[1]
}
