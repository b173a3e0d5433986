package internal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// This test owns what make prints while it works: a long step is never
// silent, and a line is shown when it is written.

// TestBuildProgress: scripts/progress.sh, which make build's go build -v
// runs through, prints a line every PROGRESS_EVERY package names, passes
// every other line (a compiler error) on to stderr, and exits with the
// command's status.
func TestBuildProgress(t *testing.T) {
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "progress.sh"), "go build", "sh", "-c",
		`for i in $(seq 1 250); do echo example.com/p$i >&2; done; echo "x.go:1:2: undefined: y" >&2; exit 3`)
	cmd.Env = append(os.Environ(), "PROGRESS_EVERY=100", "PROGRESS_TICK=3600")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 3, ee.ExitCode())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 2, stdout.String())
	require.Regexp(t, `^go build: 100 packages compiled \(\d+ s\)$`, lines[0])
	require.Regexp(t, `^go build: 200 packages compiled \(\d+ s\)$`, lines[1])
	require.Equal(t, "x.go:1:2: undefined: y\n", stderr.String())
}

// TestMakeBuildShowsProgress: make build (and so make run) compiles through
// scripts/progress.sh with go build -v.
func TestMakeBuildShowsProgress(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "-n", "-B", "build", "GO=go")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var build string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, " build ") {
			build = l
		}
	}
	require.Contains(t, build, `scripts/progress.sh "go build" go build -v `)
}

// TestMakeTestStreamsInstallLines: make test's first step runs its builds
// and installs side by side without --output-sync, which held each job's
// output until it ended (an "installing (about 2 min)" line came with its
// "done"), and names the apt packages it may install.
func TestMakeTestStreamsInstallLines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	require.NoError(t, err)
	var step string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "go-builds other-tools") && strings.Contains(l, "step ") {
			step = l
		}
	}
	require.NotEmpty(t, step, "make test's first step")
	require.NotContains(t, step, "--output-sync")
	for _, pkg := range []string{"apt-get install", "spin", "prometheus-pushgateway", "prometheus-node-exporter"} {
		require.Contains(t, step, pkg)
	}
}

// repoRoot is the checkout's root: go test runs in internal/.
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	require.NoError(t, err)
	return abs
}
