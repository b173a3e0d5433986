package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// tools are the binaries one run compares, with their versions.
type tools struct {
	Reaper, VersityGW, AWS, Rclone string
	Floor                          string // bench/floor, built into the scratch directory
	FakeGCS                        string // "" when the GCS scenarios are off
	Azurite                        string
	Versions                       map[string]string

	// Node runs RetentionJS (test/interop/js/retention_bench.mjs) with the
	// LanceDB client test/interop installs ("" without retention
	// scenarios).
	Node, RetentionJS string
}

// setupTools installs what is missing (peers with apt-get as root,
// versitygw with scripts/install-versitygw.sh), builds reaper with
// `make build`, and records every version.
func setupTools(ctx context.Context, c config) (tools, error) {
	t := tools{Versions: map[string]string{}}
	if c.Only == "memory" {
		return memoryTools(ctx, c, t)
	}
	if c.Install {
		if len(c.Peers) > 0 && (lookAWS() == "" || lookPath("rclone") == "") && os.Geteuid() == 0 {
			logf("installing awscli and rclone with apt-get")
			cmd := exec.CommandContext(ctx, "sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq awscli rclone")
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return t, fmt.Errorf("apt-get install awscli rclone: %w", err)
			}
		}
		if err := sh(ctx, c.Repo, "scripts/install-versitygw.sh"); err != nil {
			return t, err
		}
		if len(c.GCSSizes) > 0 {
			if err := sh(ctx, c.Repo, "scripts/install-fake-gcs-server.sh"); err != nil {
				return t, err
			}
		}
		if len(c.AzureSizes) > 0 {
			if err := sh(ctx, c.Repo, "scripts/install-azurite.sh"); err != nil {
				return t, err
			}
		}
		if err := sh(ctx, c.Repo, "make", "build"); err != nil {
			return t, err
		}
		if len(c.Retention) > 0 {
			if err := sh(ctx, c.Repo, "make", "interop-deps"); err != nil {
				return t, err
			}
		}
	}
	if len(c.Retention) > 0 {
		if t.Node = lookPath("node"); t.Node == "" {
			return t, fmt.Errorf("the retention scenarios run the LanceDB client: install node (22 or newer), or pass --retention none")
		}
		t.RetentionJS = filepath.Join(c.Repo, "test", "interop", "js", "retention_bench.mjs")
		if _, err := os.Stat(filepath.Join(c.Repo, "test", "interop", "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
			return t, fmt.Errorf("the LanceDB client is not installed in test/interop/node_modules (run make interop-deps, or pass --retention none): %w", err)
		}
		t.Versions["node"] = strings.TrimSpace(out(ctx, "", t.Node, "--version"))
		t.Versions["lancedb"] = npmVersion(c.Repo, "@lancedb/lancedb")
	}
	t.Reaper = filepath.Join(c.Repo, "bin", "reaper")
	floor, err := buildFloor(ctx, c)
	if err != nil {
		return t, err
	}
	t.Floor = floor
	t.VersityGW = filepath.Join(c.Repo, ".tools", "bin", "versitygw")
	t.Azurite = filepath.Join(c.Repo, ".tools", "bin", "azurite-blob")
	if v := os.Getenv("REAPER_AZURITE"); v != "" {
		t.Azurite = v
	}
	if len(c.AzureSizes) > 0 {
		if out, err := exec.CommandContext(ctx, t.Azurite, "--version").Output(); err == nil {
			t.Versions["azurite"] = strings.TrimSpace(string(out))
		}
	}
	if v := os.Getenv("REAPER_VERSITYGW"); v != "" {
		t.VersityGW = v
	}
	if len(c.GCSSizes) > 0 {
		t.FakeGCS = filepath.Join(c.Repo, ".tools", "bin", "fake-gcs-server")
		if v := os.Getenv("REAPER_FAKE_GCS"); v != "" {
			t.FakeGCS = v
		}
		if _, err := os.Stat(t.FakeGCS); err != nil {
			return t, fmt.Errorf("%s missing (run without --install=false, or with --gcs-sizes none): %w", t.FakeGCS, err)
		}
		t.Versions["fake-gcs-server"] = modVersion(ctx, t.FakeGCS, "github.com/fsouza/fake-gcs-server")
	}
	t.AWS, t.Rclone = lookAWS(), lookPath("rclone")
	for _, p := range []string{t.Reaper, t.VersityGW} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("%s missing (run without --install=false): %w", p, err)
		}
	}
	t.Versions["reaper"] = strings.TrimSpace(out(ctx, c.Repo, "git", "describe", "--tags", "--always", "--dirty")) + " (" + strings.TrimSpace(out(ctx, c.Repo, "git", "rev-parse", "HEAD")) + ")"
	t.Versions["versitygw"] = modVersion(ctx, t.VersityGW, "github.com/versity/versitygw")
	t.Versions["go"] = runtime.Version()
	t.Versions["floor"] = "bench/floor, aws-sdk-go-v2/service/s3 " + modVersion(ctx, t.Floor, "github.com/aws/aws-sdk-go-v2/service/s3")
	if t.AWS != "" {
		t.Versions["awscli"] = strings.TrimSpace(out(ctx, "", t.AWS, "--version"))
	}
	if t.Rclone != "" {
		t.Versions["rclone"] = firstLine(out(ctx, "", t.Rclone, "version"))
	}
	return t, nil
}

// memoryTools builds only reaper: the memory scenario needs no server and
// no peer.
func memoryTools(ctx context.Context, c config, t tools) (tools, error) {
	if c.Install {
		if err := sh(ctx, c.Repo, "make", "build"); err != nil {
			return t, err
		}
	}
	t.Reaper = filepath.Join(c.Repo, "bin", "reaper")
	if _, err := os.Stat(t.Reaper); err != nil {
		return t, fmt.Errorf("%s missing (run without --install=false): %w", t.Reaper, err)
	}
	t.Versions["reaper"] = strings.TrimSpace(out(ctx, c.Repo, "git", "describe", "--tags", "--always", "--dirty")) + " (" + strings.TrimSpace(out(ctx, c.Repo, "git", "rev-parse", "HEAD")) + ")"
	t.Versions["go"] = runtime.Version()
	return t, nil
}

// buildFloor compiles bench/floor into the scratch directory. It is built
// on every run, --install or not: it is the reference every S3 purge is
// measured against, and it builds from the module cache the bench itself
// was compiled from.
func buildFloor(ctx context.Context, c config) (string, error) {
	bin := filepath.Join(c.WorkDir, "bin", "floor")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./bench/floor")
	cmd.Dir = c.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build bench/floor: %w", err)
	}
	return bin, nil
}

// npmVersion is an installed npm package's version in test/interop.
func npmVersion(repo, pkg string) string {
	b, err := os.ReadFile(filepath.Join(repo, "test", "interop", "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return "unknown"
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil {
		return "unknown"
	}
	return p.Version
}

// lookAWS prefers the distribution's awscli (what apt-get installs) over
// any other aws on PATH.
func lookAWS() string {
	if _, err := os.Stat("/usr/bin/aws"); err == nil {
		return "/usr/bin/aws"
	}
	return lookPath("aws")
}

func lookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

func sh(ctx context.Context, dir string, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return nil
}

func out(ctx context.Context, dir string, argv ...string) string {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	b, _ := cmd.CombinedOutput()
	return string(b)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// modVersion reads a module's version from a Go binary's build info: the
// main module's, or a dependency's (bench/floor's SDK).
func modVersion(ctx context.Context, bin, module string) string {
	for _, l := range strings.Split(out(ctx, "", "go", "version", "-m", bin), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && (f[0] == "mod" || f[0] == "dep") && f[1] == module {
			return f[2]
		}
	}
	return "unknown"
}

// machine describes the host the numbers come from.
type machine struct {
	CPUs    int
	CPU     string
	MemGiB  float64
	Kernel  string
	Storage string
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.TrimPrefix(firstLine(string(b)), "MemTotal:"), "%f", &kb)
		m.MemGiB = kb / (1 << 20)
	}
	m.Kernel = strings.TrimSpace(out(context.Background(), "", "uname", "-r"))
	f := strings.Fields(firstLine(strings.TrimSpace(lastLine(out(context.Background(), "", "df", "-T", os.TempDir())))))
	if len(f) >= 2 {
		m.Storage = f[1] + " (" + f[0] + ", " + os.TempDir() + ")"
	}
	return m
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
