package internal_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// This test owns the rule that the repository's three Go modules build one
// version of every module they share. make test builds ./bin/reaper, then the
// test servers from tools/, then deploy/'s checks, all with the same flags
// (CGO_ENABLED=0, -trimpath, the Makefile's GOFLAGS), so a package of the
// same module version compiles once and the later builds take it from the
// build cache. A shared module held at two versions compiles twice on every
// cold make test: versitygw alone shares the AWS and Azure SDKs, arrow and
// golang.org/x with reaper, which cut its cold build from 78 s to 52 s.

// moduleBuilds are the non-race builds that share the build cache: the
// race-built suites share it with nobody.
var moduleBuilds = []struct {
	dir, what, get string // get: where to run go get
	args           []string
}{
	{"..", "./bin/reaper", "go get", []string{"./cmd/reaper"}},
	{"../tools", "the test servers (tools/)", "cd tools && go get", []string{"tool"}},
	{"../deploy", "deploy/'s checks", "cd deploy && go get", []string{"-test", "./..."}},
}

func TestOneVersionPerSharedModule(t *testing.T) {
	type use struct{ what, get, version string }
	uses := map[string][]use{} // module path -> the builds that link it
	for _, b := range moduleBuilds {
		for _, f := range []string{"go.mod", "go.sum"} {
			_, err := os.Stat(b.dir + "/" + f) // go test's cache keys on these
			require.NoError(t, err)
		}
		cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}, b.args...)...)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.Output()
		require.NoError(t, err, "go list -deps %v in %s: %s", b.args, b.dir, stderr(err))
		seen := map[string]bool{}
		for line := range strings.Lines(string(out)) {
			path, version, _ := strings.Cut(strings.TrimSpace(line), " ")
			if path == "" || version == "" || seen[path] { // the module itself has no version
				continue
			}
			seen[path] = true
			uses[path] = append(uses[path], use{b.what, b.get, version})
		}
		require.NotEmpty(t, seen, "%s links no module", b.what)
	}

	shared := 0
	var drift []string
	for path, us := range uses {
		if len(us) < 2 {
			continue
		}
		shared++
		top := slices.MaxFunc(us, func(a, b use) int { return compareVersions(a.version, b.version) }).version
		for _, u := range us {
			if u.version != top {
				drift = append(drift, fmt.Sprintf("%s: %s builds %s, another build %s; hold it at one version: %s %s@%s",
					path, u.what, u.version, top, u.get, path, top))
			}
		}
	}
	slices.SortFunc(drift, cmp.Compare)
	if len(drift) > 0 {
		t.Fatalf("a module two builds share compiles once per version on a cold make test:\n%s", strings.Join(drift, "\n"))
	}
	// About 100 today (mostly versitygw's and fake-gcs-server's SDKs): the
	// count guards against a go list that quietly matched nothing.
	require.Greater(t, shared, 30, "modules shared between the builds")
}

// compareVersions orders module versions (vX.Y.Z[-pre][+meta]) well enough
// to name the higher one in a fix: numbers compare as numbers, and a
// release sorts after its pre-releases (pseudo-versions included).
func compareVersions(a, b string) int {
	split := func(v string) ([3]int, string) {
		v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "+")
		core, pre, _ := strings.Cut(v, "-")
		var n [3]int
		for i, f := range strings.SplitN(core, ".", 3) {
			n[i], _ = strconv.Atoi(f)
		}
		return n, pre
	}
	an, ap := split(a)
	bn, bp := split(b)
	if c := slices.Compare(an[:], bn[:]); c != 0 {
		return c
	}
	switch {
	case ap == bp:
		return 0
	case ap == "":
		return 1
	case bp == "":
		return -1
	}
	return cmp.Compare(ap, bp)
}

// stderr is what a failed command printed.
func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
