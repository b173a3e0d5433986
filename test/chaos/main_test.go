// Package chaos holds the suites that try to make reaper lose live data:
// fault injection in front of a real S3 server, SIGKILL and SIGSTOP at
// random points (local disk, S3, GCS, Azure), drop/revive/purge races with
// a raw writer, replicas purging the same roots, and version retention
// killed and stopped beside the real LanceDB client writing. The purge
// suites check the same invariants (invariants_test.go) on checksums of
// every object before and after; the retention suite has LanceDB read
// every version it lists (retention_chaos_test.go).
//
// `make test` runs short, bounded versions; `make soak` sets
// REAPER_TEST_SOAK=1 for long ones. Knobs (environment; the REAPER_TEST_
// prefix keeps reaper's own REAPER_* configuration from reading them):
//
//	REAPER_TEST_SOAK=1                 long versions (more kills, seeds, rounds)
//	REAPER_TEST_CHAOS_SEED=N           base seed (default random, always logged)
//	REAPER_TEST_CHAOS_KILLS=N          kill points of the local crash suite
//	REAPER_TEST_CHAOS_S3_KILLS=N       kill points of the S3 crash suite
//	REAPER_TEST_CHAOS_GCS_KILLS=N      kill points of the GCS crash suite
//	REAPER_TEST_CHAOS_AZURE_KILLS=N    kill points of the Azure crash suite
//	REAPER_TEST_CHAOS_PAUSES=N         stopped rounds of the local pause suite
//	REAPER_TEST_CHAOS_S3_PAUSES=N      stopped rounds of the S3 pause suite
//	REAPER_TEST_CHAOS_GCS_PAUSES=N     stopped rounds of the GCS pause suite
//	REAPER_TEST_CHAOS_AZURE_PAUSES=N   stopped rounds of the Azure pause suite
//	REAPER_TEST_CHAOS_FAULT_SEEDS=N    seeds of the fault-injection suite
//	REAPER_TEST_CHAOS_FAULT_RATE=F     per-request fault probability (0.2)
//	REAPER_TEST_CHAOS_FAULT_PASS_SECONDS=N  time limit of the faulty pass (45)
//	REAPER_TEST_CHAOS_ROUNDS=N         rounds of the race suite
//	REAPER_TEST_CHAOS_REPLICA_ROUNDS=N rounds of the replica suite
//	REAPER_TEST_CHAOS_ROOT_MOVES=N     local roots repointed mid-purge
//	REAPER_TEST_CHAOS_RETAIN_ROUNDS=N  rounds of the retention suite beside LanceDB
//	REAPER_TEST_CHAOS_RECORD_ROUNDS=N  rounds of the retention record suite on each backend
//	REAPER_TEST_CHAOS_RACE_BIN=1       build the reaper binary with -race
//	REAPER_TEST_BIN=PATH               use this reaper binary (make test: ./bin/reaper)
package chaos

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// TestMain runs the suites, then stops the shared servers and removes the
// reaper binary: objstoretest.Main plus the binary's clean-up, which Main
// (it ends in os.Exit) leaves no room for.
func TestMain(m *testing.M) {
	flag.Parse()
	// The suites mostly wait: on child processes, fsync, lease expiry and a
	// paced S3 client. Run more of them at once than the default (one per
	// CPU) unless -parallel was given.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "4")
	}
	code := m.Run()
	objstoretest.StopS3()
	objstoretest.StopGCS()
	objstoretest.StopAzure()
	objstoretest.StopDDB()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// reaperBin builds cmd/reaper once per test binary. It is built without the
// race detector: a -race reaper takes over a second to start here, and the
// crash suite starts it hundreds of times. REAPER_TEST_CHAOS_RACE_BIN=1
// (set by `make soak`) builds it with -race, and a data race inside reaper
// under chaos then fails the run (exit status 66).
//
// REAPER_TEST_BIN, when set (`make test` sets it to the ./bin/reaper it has
// just built), is used as it is instead, unless a -race binary is wanted.
func reaperBin(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("REAPER_TEST_BIN"); bin != "" && !raceBin() {
		if !fileExists(bin) {
			t.Fatalf("REAPER_TEST_BIN=%s: no such file; run make build", bin)
		}
		return bin
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "reaper-chaos-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "reaper")
		args := []string{"build", "-o", binPath}
		if raceBin() {
			args = append(args, "-race")
		}
		args = append(args, "github.com/lance-reaper/reaper/cmd/reaper")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, goTool(), args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("go %v: %w\n%s", args, err, out.String())
			return
		}
		fmt.Fprintf(os.Stderr, "chaos: built %s (race=%t) in %s\n", binPath, raceBin(), time.Since(start).Round(time.Millisecond))
	})
	if binErr != nil {
		t.Fatalf("build reaper: %v", binErr)
	}
	return binPath
}

// goTool is the go command: `go test` puts its own GOROOT/bin first in
// PATH, so this is the toolchain running the tests.
func goTool() string { return "go" }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// raceBin: build reaper with -race (REAPER_TEST_CHAOS_RACE_BIN=1).
func raceBin() bool { return os.Getenv("REAPER_TEST_CHAOS_RACE_BIN") == "1" }

// soak reports whether the long versions run.
func soak() bool { return os.Getenv("REAPER_TEST_SOAK") == "1" }

// knob reads an integer knob, with separate defaults for CI and soak.
func knob(t testing.TB, name string, ci, long int) int {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a non-negative integer", name, v)
		}
		return n
	}
	if soak() {
		return long
	}
	return ci
}

// floatKnob reads a probability knob.
func floatKnob(t testing.TB, name string, ci, long float64) float64 {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			t.Fatalf("%s=%q: want a probability in [0, 1]", name, v)
		}
		return f
	}
	if soak() {
		return long
	}
	return ci
}

// baseSeed is REAPER_TEST_CHAOS_SEED or a random seed, logged so a failure can be
// replayed: every test derives its seeds from it and names them in subtest
// names and failure messages.
func baseSeed(t testing.TB) uint64 {
	t.Helper()
	if v := os.Getenv("REAPER_TEST_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REAPER_TEST_CHAOS_SEED=%q: want an unsigned integer", v)
		}
		t.Logf("base seed %d (from REAPER_TEST_CHAOS_SEED)", s)
		return s
	}
	s := rand.Uint64() % 1_000_000_000
	t.Logf("base seed %d (replay with REAPER_TEST_CHAOS_SEED=%d)", s, s)
	return s
}

// newRand is the one RNG constructor: every random choice of a suite comes
// from a seed that the test logs.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
