// Command bench measures reaper's purge against the raw S3 floor
// (bench/floor), awscli, rclone and rm -rf on the same machine, in the
// same run, on identical fresh copies of synthetic Lance tables, and
// reaper's purge on Google Cloud Storage's emulator
// (fake-gcs-server, gcs.go), and writes the results table to BENCHMARKS.md.
//
//	go run ./bench            # full run (10k and 100k objects on S3, 1M local files)
//	go run ./bench --quick    # 10k objects, smaller local runs
//
// S3 is a versitygw process on 127.0.0.1 (posix backend, its own temporary
// data directory). Tables are created as files in its data directory, which
// is what its posix backend stores, after CreateBucket through the API.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is what one benchmark run measures.
type config struct {
	Quick         bool
	GCSSizes      []int // objects per table on fake-gcs-server; none: no GCS scenario
	Reps          int
	Sizes         []int // objects per table on S3
	AzureSizes    []int // objects per table on Azurite (none: skip Azure)
	LocalSizes    []int // objects per table for reaper vs rm -rf
	RSSObjects    int   // objects in the local table whose purge is checked for peak RSS
	RSSPeer       bool  // also time rm -rf on the RSS table
	RSSReps       int   // alternating repetitions of the RSS pair
	ObjSize       int   // bytes per object
	StatusTables  int
	StatusDeleted int
	Roots         int
	DeleteConc    int // limits.delete_concurrency for reaper; 0 = reaper's default
	AWSMaxObjects int // awscli runs only on tables up to this size; 0 = all
	Peers         []string
	WorkDir       string
	Out           string
	Repo          string
	Install       bool
	Keep          bool
	Render        string
	// MemEntries are the top-level entries of the memory scenario's roots
	// (none: skip it); MemBaseline a git revision built and measured
	// beside this tree's reaper there; MemReps its repetitions.
	MemEntries  []int
	MemBaseline string
	MemReps     int
	// Only names the one scenario group to run ("memory", "retention"):
	// its section replaces the same section of the results file, and the
	// rest is kept.
	Only string
	// Retention: where the retention scenarios run (s3, local; none).
	Retention              []string
	RetentionVersions      int // versions of the single-table fixture
	RetentionTables        int // tables of the many-table fixture
	RetentionTableVersions int // versions of each of those tables
	RetentionReps          int
	// RetentionRead are the versions of the tables the version-reading
	// scenarios read (none: skip them).
	RetentionRead []int
	// RetentionIdle are the table counts of the idle-table scenarios
	// (retention_idle.go; none: skip them), RetentionIdlePasses the
	// daemon's passes measured after its first, RetentionIdleInterval its
	// schedule (0: from the one-shot's time, idleInterval).
	RetentionIdle         []int
	RetentionIdlePasses   int
	RetentionIdleInterval time.Duration
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	c := config{}
	var sizes, local, peers, gcsSizes, azSizes, memEntries, retention, retRead, retIdle string
	fs.BoolVar(&c.Quick, "quick", false, "quick run: 10k objects on S3, 10k local, 1M-object RSS check without the rm -rf peer")
	fs.IntVar(&c.Reps, "reps", 5, "alternating repetitions per contender")
	fs.StringVar(&sizes, "sizes", "", "objects per table on S3, comma-separated (default 10000,100000; quick 10000), or \"none\"")
	fs.StringVar(&gcsSizes, "gcs-sizes", "10000", "objects per table on Google Cloud Storage (fake-gcs-server, emulator figures; its uploads slow down as a bucket grows, ~45 objects/s at 10,000), comma-separated; \"none\" skips it")
	fs.StringVar(&azSizes, "azure-sizes", "", "objects per table on Azurite, comma-separated, or \"none\" (default 2000: the emulator slows with its blob count)")
	fs.StringVar(&local, "local-sizes", "", "objects per table for the local reaper vs rm -rf runs (default 10000,100000; quick 10000), or \"none\"")
	fs.IntVar(&c.RSSObjects, "rss-objects", 1_000_000, "objects in the local table purged for the peak-RSS check")
	fs.IntVar(&c.RSSReps, "rss-reps", 0, "alternating repetitions of the 1M-object local pair (0 = --reps in the full mode, 1 in --quick; about 6 min a pair at 1,000,000)")
	fs.IntVar(&c.ObjSize, "object-size", 64, "bytes per synthetic object")
	fs.IntVar(&c.StatusTables, "status-tables", 10_000, "tables in the root scanned by reaper status")
	fs.IntVar(&c.StatusDeleted, "status-deleted", 1_000, "of which soft-deleted")
	fs.IntVar(&c.Roots, "roots", 1_000, "small roots in the discover pass")
	fs.IntVar(&c.DeleteConc, "delete-concurrency", 0, "reaper limits.delete_concurrency (0 = reaper's default)")
	fs.IntVar(&c.AWSMaxObjects, "awscli-max-objects", 0, "run awscli only on S3 tables of at most this many objects (0 = every size); it deletes one key per request")
	fs.StringVar(&peers, "peers", "awscli,rclone", "S3 peers to run")
	fs.StringVar(&c.WorkDir, "workdir", "", "scratch directory (default a new temporary directory, removed afterwards)")
	fs.StringVar(&c.Out, "out", "BENCHMARKS.md", "results file, relative to the repository")
	fs.BoolVar(&c.Install, "install", true, "install missing peers (apt-get, as root) and versitygw, and build reaper")
	fs.BoolVar(&c.Keep, "keep", false, "keep the scratch directory")
	fs.StringVar(&c.Render, "render", "", "measure nothing: rewrite the results file from a run's raw results (.bench/last-run.json)")
	fs.StringVar(&memEntries, "memory-entries", "", "top-level entries of the memory scenario's local roots (half tables, half their markers), comma-separated (default 200000,1000000; quick 200000), or \"none\"")
	fs.StringVar(&c.MemBaseline, "memory-baseline", "", "git revision whose reaper the memory scenario also measures, on the same roots (before/after a change)")
	fs.IntVar(&c.MemReps, "memory-reps", 1, "repetitions of each memory scenario command per build")
	fs.StringVar(&c.Only, "only", "", `run one group of scenarios and rewrite only its section of the results file: "memory", "retention", "retention-read" or "retention-idle"`)
	fs.StringVar(&retention, "retention", "s3,local", `where reaper retain runs against the LanceDB client's cleanup: "s3", "local", both, or "none"`)
	fs.IntVar(&c.RetentionVersions, "retention-versions", 2000, "versions of the single-table retention fixture, about 10 files each (0: no single-table scenario)")
	fs.IntVar(&c.RetentionTables, "retention-tables", 100, "tables of the many-table retention fixture (0: no many-table scenario)")
	fs.IntVar(&c.RetentionTableVersions, "retention-table-versions", 100, "versions of each of those tables")
	fs.StringVar(&retRead, "retention-read-versions", "", "versions of the tables whose every version reaper retain --dry-run and the client's listVersions() read, comma-separated (default 1000,10000; quick 1000), or \"none\"; runs where --retention says (building 10,000 versions takes about 13 min, once: cached)")
	fs.StringVar(&retIdle, "retention-idle-tables", "", "tables of the idle-table scenarios (nothing to remove in any: the client's cleanup loop, reaper retain and reaper run's passes over them), comma-separated (default 1000,10000; quick 200), or \"none\"; S3 only, where --retention has s3 (building 10,000 tables takes a few minutes, once: cached)")
	fs.IntVar(&c.RetentionIdlePasses, "retention-idle-passes", 3, "reaper run's passes measured after its first, in each idle regime")
	fs.DurationVar(&c.RetentionIdleInterval, "retention-idle-interval", 0, "reaper run's schedule in the idle scenarios (@every this; 0: twice reaper retain's time over the same tables plus 5 s, at least 5 s)")
	fs.IntVar(&c.RetentionReps, "retention-reps", 3, "alternating repetitions per retention contender (local runs build their tables afresh each time: about 40 s for 2,000 versions, 2 min for 100 tables)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	def := "10000,100000"
	if c.Quick {
		def = "10000"
	}
	var err error
	if sizes != "none" {
		if c.Sizes, err = intList(sizes, def); err != nil {
			return c, err
		}
	}
	if local != "none" {
		if c.LocalSizes, err = intList(local, def); err != nil {
			return c, err
		}
	}
	if gcsSizes != "none" {
		if c.GCSSizes, err = intList(gcsSizes, "10000"); err != nil {
			return c, err
		}
	}
	if azSizes != "none" {
		if c.AzureSizes, err = intList(azSizes, "2000"); err != nil {
			return c, err
		}
	}
	if memEntries != "none" {
		def := "200000,1000000"
		if c.Quick {
			def = "200000"
		}
		if c.MemEntries, err = intList(memEntries, def); err != nil {
			return c, err
		}
	}
	if c.Only != "" && !slices.Contains(onlyGroups, c.Only) {
		return c, fmt.Errorf("--only %q: want one of %s", c.Only, strings.Join(onlyGroups, ", "))
	}
	if retIdle != "none" {
		def := "1000,10000"
		if c.Quick {
			def = "200"
		}
		if c.RetentionIdle, err = intList(retIdle, def); err != nil {
			return c, err
		}
	}
	if c.RetentionIdlePasses < 1 {
		return c, fmt.Errorf("--retention-idle-passes %d: want at least 1", c.RetentionIdlePasses)
	}
	if retRead != "none" {
		def := "1000,10000"
		if c.Quick {
			def = "1000"
		}
		if c.RetentionRead, err = intList(retRead, def); err != nil {
			return c, err
		}
	}
	if c.MemReps < 1 {
		return c, fmt.Errorf("--memory-reps %d: want at least 1", c.MemReps)
	}
	if retention != "none" {
		for _, w := range strings.Split(retention, ",") {
			if w = strings.TrimSpace(w); w != "s3" && w != "local" {
				return c, fmt.Errorf("--retention %q: want s3, local, both (s3,local) or none", retention)
			}
			c.Retention = append(c.Retention, strings.TrimSpace(w))
		}
	}
	if c.Quick {
		c.RetentionVersions, c.RetentionTables, c.RetentionTableVersions, c.RetentionReps = 500, 20, 50, 1
	}
	c.RSSPeer = !c.Quick
	if c.RSSReps <= 0 {
		c.RSSReps = c.Reps
		if c.Quick {
			c.RSSReps = 1
		}
	}
	for _, p := range strings.Split(peers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.Peers = append(c.Peers, p)
		}
	}
	if strings.HasPrefix(c.Only, "retention") {
		if len(c.Retention) == 0 {
			return c, fmt.Errorf("--only %s with --retention none measures nothing", c.Only)
		}
		if c.Only == "retention-read" && len(c.RetentionRead) == 0 {
			return c, fmt.Errorf("--only retention-read with --retention-read-versions none measures nothing")
		}
		if c.Only == "retention-idle" && (len(c.RetentionIdle) == 0 || !slices.Contains(c.Retention, "s3")) {
			return c, fmt.Errorf("--only retention-idle measures on S3 alone: it needs --retention with s3 and --retention-idle-tables")
		}
		// Nothing else runs: no peers, test servers or tables to set up.
		c.Sizes, c.GCSSizes, c.AzureSizes, c.LocalSizes, c.Peers = nil, nil, nil, nil, nil
		c.RSSObjects, c.StatusTables, c.Roots = 0, 0, 0
	}
	return c, nil
}

func intList(s, def string) ([]int, error) {
	if s == "" {
		s = def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run sets up the tools, runs every scenario and writes the report.
func run(ctx context.Context, c config, args []string) error {
	if c.Repo == "" {
		wd, err := repoRoot()
		if err != nil {
			return err
		}
		c.Repo = wd
	}
	if c.WorkDir == "" {
		d, err := os.MkdirTemp("", "reaper-bench-")
		if err != nil {
			return err
		}
		c.WorkDir = d
		if !c.Keep {
			defer os.RemoveAll(d)
		}
	}
	if c.Render != "" {
		return render(c)
	}
	start := time.Now()
	t, err := setupTools(ctx, c)
	if err != nil {
		return err
	}
	rep := &report{Config: c, Tools: t, Machine: machineInfo(), Args: args, Started: start}
	if c.Only == "memory" {
		rep.MemOnly = true
		if err := memoryScenario(ctx, c, t, rep); err != nil {
			return err
		}
		rep.Elapsed = time.Since(start)
		if err := writeMemoryOnly(c, rep); err != nil {
			return err
		}
		logf("wrote the memory section of %s (%s)", resultsPath(c.Repo, c.Out), rep.Elapsed.Round(time.Second))
		fmt.Print(rep.summary())
		return nil
	}
	out := resultsPath(c.Repo, c.Out)
	write := func(partial bool) error {
		rep.Partial, rep.Elapsed = partial, time.Since(start)
		if err := saveRaw(c.Repo, rep); err != nil {
			return err
		}
		return writeResults(out, rep)
	}
	if err := runScenarios(ctx, c, t, rep, func() error { return write(true) }); err != nil {
		return err
	}
	if err := write(false); err != nil {
		return err
	}
	logf("wrote %s (%s)", out, rep.Elapsed.Round(time.Second))
	fmt.Print(rep.summary())
	return nil
}

// onlyGroups are the scenario groups --only runs alone.
var onlyGroups = []string{"memory", "retention", "retention-read", "retention-idle"}

// rawPath keeps the last run's measurements, so the report's prose can be
// corrected and re-rendered (--render) without measuring again. It is
// ignored by git: BENCHMARKS.md is the record.
const rawPath = ".bench/last-run.json"

// rawRetentionPath keeps the last --only retention (or retention-read)
// run's.
const rawRetentionPath = ".bench/last-retention-run.json"

func saveRaw(repo string, rep *report) error {
	p := filepath.Join(repo, rawPath)
	switch rep.Config.Only {
	case "retention":
		p = filepath.Join(repo, rawRetentionPath)
	case "retention-read":
		p = filepath.Join(repo, ".bench/last-retention-read-run.json")
	case "retention-idle":
		p = filepath.Join(repo, ".bench/last-retention-idle-run.json")
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// resultsPath is the results file: --out, relative to the repository.
func resultsPath(repo, out string) string {
	if filepath.IsAbs(out) {
		return out
	}
	return filepath.Join(repo, out)
}

// render rewrites the results file from saved raw results.
func render(c config) error {
	b, err := os.ReadFile(c.Render)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", c.Render, err)
	}
	if rep.MemOnly {
		return renderMemory(c, &rep)
	}
	out := resultsPath(c.Repo, rep.Config.Out)
	if err := writeResults(out, &rep); err != nil {
		return err
	}
	logf("rendered %s from %s", out, c.Render)
	fmt.Print(rep.summary())
	return nil
}

// writeResults writes the results file: for --only retention its
// retention section alone; otherwise the whole report, keeping each section
// of the file whose group this run did not measure, and the guard's, which
// no run measures.
func writeResults(out string, rep *report) error {
	b, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	old := string(b)
	if rep.Config.Only == "retention" {
		return os.WriteFile(out, []byte(retentionMarks.splice(old, rep.retentionSection())), 0o644)
	}
	if rep.Config.Only == "retention-read" {
		return os.WriteFile(out, []byte(retReadMarks.splice(old, rep.retentionReadSection())), 0o644)
	}
	if rep.Config.Only == "retention-idle" {
		return os.WriteFile(out, []byte(retIdleMarks.splice(old, rep.retentionIdleSection())), 0o644)
	}
	doc := rep.markdown()
	if len(rep.Memory) == 0 && memoryMarks.of(old) != "" {
		doc = memoryMarks.splice(doc, memoryMarks.of(old))
	}
	if len(rep.Retention) == 0 && retentionMarks.of(old) != "" {
		doc = retentionMarks.splice(doc, retentionMarks.of(old))
	}
	if len(rep.RetentionRead) == 0 && retReadMarks.of(old) != "" {
		doc = retReadMarks.splice(doc, retReadMarks.of(old))
	}
	if len(rep.RetentionIdle) == 0 && retIdleMarks.of(old) != "" {
		doc = retIdleMarks.splice(doc, retIdleMarks.of(old))
	}
	if g := guardMarks.of(old); g != "" {
		doc = guardMarks.splice(doc, g)
	}
	return os.WriteFile(out, []byte(doc), 0o644)
}

// repoRoot finds the module root above the working directory.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for p := d; ; p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return p, nil
		}
		if filepath.Dir(p) == p {
			return "", fmt.Errorf("no go.mod above %s", d)
		}
	}
}
