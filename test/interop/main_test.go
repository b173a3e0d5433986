package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/nodetest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Pinned client versions: package.json and package-lock.json pin the same.
const (
	lancedbVersion = "0.39.0"
	arrowVersion   = "18.1.0"
	// hyparquet reads the audit ledger as a reader independent of reaper's
	// writer (ledger_test.go); the compressors bring zstd.
	hyparquetVersion            = "1.31.5"
	hyparquetCompressorsVersion = "1.1.2"
)

// EnvReaperBin names a prebuilt reaper binary (make interop passes
// ./bin/reaper); without it the tests build one into a temporary directory.
// It has the REAPER_TEST_ prefix because reaper refuses unknown REAPER_*
// variables, except the test harness's.
const EnvReaperBin = "REAPER_TEST_BIN"

var (
	binDir    string
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "reaper-interop-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	code := m.Run()
	objstoretest.StopS3()
	objstoretest.StopAzure()
	objstoretest.StopDDB()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// required reports whether a missing prerequisite must fail the run (CI)
// rather than skip it.
func required() bool {
	return os.Getenv(objstoretest.EnvRequireS3) == "1" || os.Getenv("CI") == "true"
}

// requireNode checks that node and the pinned npm packages are installed in
// test/interop/node_modules: skip with instructions when they are not, or
// fail under CI=true / REAPER_REQUIRE_S3=1.
func requireNode(t *testing.T) string {
	t.Helper()
	problem := nodeProblem()
	switch {
	case problem == "":
		return nodePath
	case required():
		t.Fatalf("interop: %s (%s=1 or CI=true forbids skipping); run `make interop-deps` (npm install in test/interop)", problem, objstoretest.EnvRequireS3)
	default:
		t.Skipf("interop: %s; run `make interop` (or `make interop-deps`, then go test ./test/interop)", problem)
	}
	return ""
}

var (
	nodeOnce    sync.Once
	nodePath    string
	nodeMissing string
)

func nodeProblem() string {
	nodeOnce.Do(func() {
		p, err := exec.LookPath("node")
		if err != nil {
			nodeMissing = "node is not installed (need Node 22 or newer; 20 works with an npm EBADENGINE warning)"
			return
		}
		nodePath = p
		for pkg, want := range map[string]string{"@lancedb/lancedb": lancedbVersion, "apache-arrow": arrowVersion,
			"hyparquet": hyparquetVersion, "hyparquet-compressors": hyparquetCompressorsVersion} {
			got, err := installedVersion(pkg)
			if err != nil {
				nodeMissing = fmt.Sprintf("npm package %s is not installed in test/interop/node_modules: %v", pkg, err)
				return
			}
			if got != want {
				nodeMissing = fmt.Sprintf("npm package %s is %s in test/interop/node_modules, want %s", pkg, got, want)
				return
			}
		}
		// The native binary is an optional dependency, one package per
		// platform: npm install --omit=optional leaves LanceDB unusable.
		if native, _ := filepath.Glob(filepath.Join("node_modules", "@lancedb", "lancedb-*", "package.json")); len(native) == 0 {
			nodeMissing = "the native LanceDB binary (npm package @lancedb/lancedb-<platform>, an optional dependency) is not installed in test/interop/node_modules; install without --omit=optional"
		}
	})
	return nodeMissing
}

// jsScript returns js/<name> as an absolute path (nodetest.Script: the
// test cache runs these tests again when a script or a module it imports
// changes).
func jsScript(t *testing.T, name string) string {
	t.Helper()
	return nodetest.Script(t, "js", name)
}

func installedVersion(pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join("node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return "", err
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("read package.json of %s: %w", pkg, err)
	}
	return p.Version, nil
}

// reaperBin returns the reaper CLI: $REAPER_BIN, or a build of ./cmd/reaper
// shared by every test of the process.
func reaperBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv(EnvReaperBin); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatalf("%s=%s: %v", EnvReaperBin, b, err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s=%s: %v", EnvReaperBin, b, err)
		}
		return abs
	}
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(binDir, "reaper")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/lance-reaper/reaper/cmd/reaper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/reaper: %v: %s", err, strings.TrimSpace(string(b)))
			return
		}
		buildBin = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}
