package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns the version-retention scenarios: reaper's `retain` against
// the LanceDB client's own cleanup, optimize({cleanupOlderThan}), side by
// side on identical tables the client wrote (test/interop/js/
// retention_bench.mjs): one table of about 2,000 versions and 20,000 files,
// and 100 tables of 100 versions (the client then loops over them, as a
// user must today). On S3 (versitygw) each run gets a fresh bucket holding
// a cp -a copy of a fixture built once and cached under .bench/fixtures/;
// on a local disk each run gets a table built afresh, because a copy is
// not the same table to reaper there: its local store dates a file by the
// later of mtime and ctime, and a copy's ctime is the copy's time, so
// reaper would judge every copied file newer than the versions (Lance's
// listing cutoff keeps such files; the client reads mtime only).

// retentionShape is one fixture: what retention_bench.mjs build writes.
type retentionShape struct {
	Name         string  `json:"-"`
	Tables       int     `json:"tables"`
	Versions     int     `json:"versions"`
	DeleteFrags  int     `json:"delete_frags"`
	UpdateFrags  int     `json:"update_frags"`
	CompactEvery int     `json:"compact_every"`
	KeepFraction float64 `json:"keep_fraction"`
}

// retentionFixtureFormat names the cached fixtures: bump it when
// retention_bench.mjs builds them differently.
const retentionFixtureFormat = 1

// key names the shape's cached fixture.
func (s retentionShape) key() string {
	return fmt.Sprintf("retention-f%d-%dx%d-d%d-u%d-c%d-k%g", retentionFixtureFormat, s.Tables, s.Versions, s.DeleteFrags, s.UpdateFrags, s.CompactEvery, s.KeepFraction)
}

// retentionShapes are the single-table and many-table fixtures of c.
func retentionShapes(c config) []retentionShape {
	return []retentionShape{
		// A delete takes a row of each of the 24 newest appends and an
		// update one of the 12 newest, so 2,000 versions make about
		// 20,000 files; a compaction every 400 versions keeps manifests
		// small (as a table that is optimized now and then).
		{Name: "single", Tables: 1, Versions: c.RetentionVersions, DeleteFrags: 24, UpdateFrags: 12, CompactEvery: 400, KeepFraction: 0.05},
		{Name: "multi", Tables: c.RetentionTables, Versions: c.RetentionTableVersions, DeleteFrags: 6, UpdateFrags: 3, KeepFraction: 0.1},
	}
}

// retentionFixture is one built set of tables and the cutoff placed in
// the pause the builder made before their newest versions.
type retentionFixture struct {
	Dir      string `json:"-"` // the root holding the tables
	CutoffMs int64  `json:"cutoff_ms"`
	Tables   []struct {
		Name     string `json:"name"`
		Versions int    `json:"versions"`
	} `json:"tables"`
	Files int   `json:"files"`
	Build int64 `json:"build_ms"`
}

func (f retentionFixture) names() []string {
	var out []string
	for _, t := range f.Tables {
		out = append(out, t.Name)
	}
	return out
}

func (f retentionFixture) cutoff() time.Time { return time.UnixMilli(f.CutoffMs) }

// buildFixture writes shape's tables into the new local root dir with the
// client.
func buildFixture(ctx context.Context, t tools, shape retentionShape, dir string) (retentionFixture, error) {
	fx, err := buildWith(ctx, t, "build", shape, dir)
	if err != nil {
		return fx, fmt.Errorf("build retention fixture %s: %w", shape.key(), err)
	}
	return fx, nil
}

// buildWith runs retention_bench.mjs's builder cmd with spec on the new
// local root dir and reads what it built.
func buildWith(ctx context.Context, t tools, cmd string, spec any, dir string) (retentionFixture, error) {
	fx := retentionFixture{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fx, err
	}
	js, _ := json.Marshal(spec)
	start := time.Now()
	res, err := measure(ctx, nil, t.Node, t.RetentionJS, cmd, dir, string(js))
	if err != nil {
		return fx, err
	}
	if err := json.Unmarshal(res.Stdout, &fx); err != nil {
		return fx, fmt.Errorf("retention_bench.mjs %s: %w: %s", cmd, err, tail(string(res.Stdout), 400))
	}
	fx.Build = time.Since(start).Milliseconds()
	fx.Files, err = countFiles(dir)
	return fx, err
}

// cachedFixture returns shape's fixture from .bench/fixtures/, building it
// there first when it is missing.
func cachedFixture(ctx context.Context, c config, t tools, shape retentionShape) (retentionFixture, error) {
	what := fmt.Sprintf("%d tables of %d versions", shape.Tables, shape.Versions)
	return cachedBuild(c, "retention/"+shape.Name, shape.key(), what, func(dir string) (retentionFixture, error) {
		return buildFixture(ctx, t, shape, dir)
	})
}

// cachedBuild returns the fixture cached under .bench/fixtures/key,
// building it there with build first when it is missing (fixture.json is
// written last: a build cut short is built again).
func cachedBuild(c config, scen, key, what string, build func(dir string) (retentionFixture, error)) (retentionFixture, error) {
	base := filepath.Join(c.Repo, ".bench", "fixtures", key)
	meta := filepath.Join(base, "fixture.json")
	if b, err := os.ReadFile(meta); err == nil {
		var fx retentionFixture
		if err := json.Unmarshal(b, &fx); err != nil {
			return fx, fmt.Errorf("%s: %w (remove %s to build it again)", meta, err, base)
		}
		fx.Dir = filepath.Join(base, "db")
		logf("%s: cached fixture %s: %d tables, %d files", scen, base, len(fx.Tables), fx.Files)
		return fx, nil
	}
	if err := os.RemoveAll(base); err != nil {
		return retentionFixture{}, err
	}
	logf("%s: building the fixture with the LanceDB client (%s; cached in %s)", scen, what, base)
	fx, err := build(filepath.Join(base, "db"))
	if err != nil {
		return fx, err
	}
	b, err := json.MarshalIndent(fx, "", " ")
	if err != nil {
		return fx, err
	}
	logf("%s: built %d files in %s", scen, fx.Files, time.Duration(fx.Build)*time.Millisecond)
	return fx, os.WriteFile(meta, b, 0o644)
}

func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	return n, err
}

// retSeries is every run of one contender in one retention scenario.
type retSeries struct {
	Scenario  string // "retention-s3/single"...
	Contender string // reaper or lancedb
	Tables    int
	Versions  int // per table, as built
	Files     int // in the fixture, all tables
	Command   string
	Samples   []retSample
}

// retSample is one measured run.
type retSample struct {
	Wall time.Duration // the whole process
	// Call is the client's cleanup loop alone, as retention_bench.mjs
	// times it (without Node's start and connect); 0 for reaper.
	Call   time.Duration
	MaxRSS int64
	Server map[string]int64 // S3: versitygw's access log
	// Client is reaper's own count (reaper_s3_http_requests_total from
	// --textfile), where a scenario reads it.
	Client map[string]int64 `json:",omitempty"`
	// ServerTime is versitygw's own time on the run's requests, by
	// operation, in milliseconds (its access log), where a scenario reads it.
	ServerTime map[string]int64 `json:",omitempty"`
	// CPU is the contender's user and system time, ServerCPU versitygw's
	// during the run, where a scenario reads them.
	CPU, ServerCPU  time.Duration `json:",omitempty"`
	VersionsRemoved int
	FilesLeft       int
}

const (
	contReaper = "reaper"
	contLance  = "lancedb"
)

// retentionScenarios runs the retention scenarios on S3 (gw) and on the
// local disk, as c asks.
func retentionScenarios(ctx context.Context, c config, t tools, gw *gateway, rep *report, checkpoint func() error) error {
	for _, shape := range retentionShapes(c) {
		if shape.Tables <= 0 || shape.Versions <= 0 {
			continue // --retention-tables 0 or --retention-versions 0
		}
		if slices.Contains(c.Retention, "s3") {
			fx, err := cachedFixture(ctx, c, t, shape)
			if err != nil {
				return err
			}
			if err := retentionS3(ctx, c, t, gw, shape, fx, rep); err != nil {
				return err
			}
			if err := checkpoint(); err != nil {
				return err
			}
		}
		if slices.Contains(c.Retention, "local") {
			if err := retentionLocal(ctx, c, t, shape, rep); err != nil {
				return err
			}
			if err := checkpoint(); err != nil {
				return err
			}
		}
	}
	return nil
}

func newRetSeries(rep *report, scen string, fx retentionFixture) map[string]*retSeries {
	out := map[string]*retSeries{}
	for _, name := range []string{contReaper, contLance} {
		out[name] = &retSeries{Scenario: scen, Contender: name, Tables: len(fx.Tables), Versions: fx.Tables[0].Versions, Files: fx.Files}
		rep.Retention = append(rep.Retention, out[name])
	}
	return out
}

// retentionS3 runs each contender on its own bucket holding a copy of fx,
// c.RetentionReps times, and requires them to leave the same keys.
func retentionS3(ctx context.Context, c config, t tools, gw *gateway, shape retentionShape, fx retentionFixture, rep *report) error {
	scen := "retention-s3/" + shape.Name
	byName := newRetSeries(rep, scen, fx)
	for r := range c.RetentionReps {
		var first []string
		for _, name := range rotate([]string{contReaper, contLance}, r) {
			bucket := fmt.Sprintf("bench-ret-%s-%s-%d", shape.Name, name, r)
			dir, err := gw.createBucket(ctx, bucket)
			if err != nil {
				return err
			}
			if err := copyTables(ctx, fx, filepath.Join(dir, "db")); err != nil {
				return err
			}
			if r == 0 {
				if got, err := gw.count(ctx, bucket, "db/"); err != nil || got != fx.Files {
					return fmt.Errorf("%s: ListObjectsV2 sees %d objects (%v), want %d", bucket, got, err, fx.Files)
				}
			}
			syscall.Sync()
			uri := "s3://" + bucket + "/db"
			argv := retentionArgv(t, name, uri, fx, storageFlags(gw), gw.optionsMap())
			off, cpu := gw.settledOffset(), gw.cpu()
			s, err := runRetention(ctx, name, argv, fx)
			if err != nil {
				return fmt.Errorf("%s: %w", bucket, err)
			}
			s.ServerCPU = gw.cpu() - cpu
			if s.Server, err = gw.requestsSince(off, bucket); err != nil {
				return err
			}
			left, err := gw.keys(ctx, bucket, "db/")
			if err != nil {
				return err
			}
			s.FilesLeft = len(left)
			if first == nil {
				first = left
			} else if d := diffKeys(first, left); d != "" {
				return fmt.Errorf("%s rep %d: reaper and the client's cleanup left different files: %s", scen, r+1, d)
			}
			byName[name].Samples = append(byName[name].Samples, s)
			byName[name].Command = redact(shellQuote(argv))
			logf("%s %-7s rep %d: %s (call %s), %d requests, %d versions removed, %d files left", scen, name, r+1,
				s.Wall.Round(time.Millisecond), s.Call.Round(time.Millisecond), sum(s.Server), s.VersionsRemoved, s.FilesLeft)
			gw.deleteBucket(ctx, bucket)
		}
	}
	return nil
}

// retentionLocal builds the tables afresh for each run on the local disk
// (see the file comment: a copy is not the same table to reaper there).
func retentionLocal(ctx context.Context, c config, t tools, shape retentionShape, rep *report) error {
	scen := "retention-local/" + shape.Name
	var byName map[string]*retSeries
	for r := range c.RetentionReps {
		left := map[string]int{}
		for _, name := range rotate([]string{contReaper, contLance}, r) {
			root := filepath.Join(c.WorkDir, "ret-local", fmt.Sprintf("%s-%s-%d", shape.Name, name, r), "db")
			logf("%s: building the tables for %s, rep %d", scen, name, r+1)
			fx, err := buildFixture(ctx, t, shape, root)
			if err != nil {
				return err
			}
			if byName == nil {
				byName = newRetSeries(rep, scen, fx)
			}
			syscall.Sync()
			argv := retentionArgv(t, name, root, fx, nil, nil)
			s, err := runRetention(ctx, name, argv, fx)
			if err != nil {
				return fmt.Errorf("%s: %w", root, err)
			}
			if s.FilesLeft, err = countFiles(root); err != nil {
				return err
			}
			left[name] = s.FilesLeft
			byName[name].Samples = append(byName[name].Samples, s)
			byName[name].Command = shellQuote(argv)
			logf("%s %-7s rep %d: %s (call %s), %d versions removed, %d files left of %d", scen, name, r+1,
				s.Wall.Round(time.Millisecond), s.Call.Round(time.Millisecond), s.VersionsRemoved, s.FilesLeft, fx.Files)
			os.RemoveAll(filepath.Dir(root))
		}
		if left[contReaper] != left[contLance] {
			return fmt.Errorf("%s rep %d: reaper left %d files, the client's cleanup %d, of tables built alike", scen, r+1, left[contReaper], left[contLance])
		}
	}
	return nil
}

// copyTables copies every table of fx into dir keeping modification times
// (the S3 server's LastModified, which both contenders compare with
// version timestamps).
func copyTables(ctx context.Context, fx retentionFixture, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range fx.names() {
		if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(fx.Dir, strings.TrimSuffix(lifecycle.TableDir(n), "/")), dir).CombinedOutput(); err != nil {
			return fmt.Errorf("copy %s: %w: %s", n, err, out)
		}
	}
	return nil
}

// retentionArgv is contender name's command on root uri: every table, the
// fixture's cutoff.
func retentionArgv(t tools, name, uri string, fx retentionFixture, flags []string, opts map[string]string) []string {
	if name == contReaper {
		argv := append([]string{t.Reaper, "retain", "--root", uri}, flags...)
		return append(argv, "--before", fx.cutoff().UTC().Format(time.RFC3339Nano), "--allow-short-ttl", "-o", "json", "--log-level", "warn")
	}
	spec, _ := json.Marshal(map[string]any{"storage_options": opts, "cutoff_ms": fx.CutoffMs, "tables": fx.names()})
	return []string{t.Node, t.RetentionJS, "cleanup", uri, string(spec)}
}

// runRetention runs one contender and checks its report: every table
// cleaned, the same versions removed.
func runRetention(ctx context.Context, name string, argv []string, fx retentionFixture) (retSample, error) {
	res, err := measure(ctx, nil, argv...)
	if err != nil {
		return retSample{}, err
	}
	s := retSample{Wall: res.Wall, MaxRSS: res.MaxRSS, CPU: res.CPU}
	if name == contReaper {
		s.VersionsRemoved, err = retainReport(res.Stdout, "cleaned", len(fx.Tables))
		return s, err
	}
	call, tables, err := cleanupReport(res.Stdout)
	if err != nil {
		return s, err
	}
	s.Call = call
	for _, tb := range tables {
		s.VersionsRemoved += tb.Removed
	}
	return s, nil
}

// retainRow is a table of `reaper retain -o json`'s report.
type retainRow struct {
	Name    string `json:"name"`
	Result  string `json:"result"`
	Reason  string `json:"reason"`
	Removed int    `json:"versions_deleted"`
}

// retainReport reads `reaper retain -o json`'s tables and checks that it
// reported n, each with result want; it returns the versions they removed.
func retainReport(stdout []byte, want string, n int) (int, error) {
	var out struct {
		Tables []retainRow `json:"tables"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return 0, fmt.Errorf("reaper retain output: %w: %s", err, tail(string(stdout), 400))
	}
	removed := 0
	for _, tb := range out.Tables {
		if tb.Result != want {
			return 0, fmt.Errorf("reaper retain: %s %s, want %s: %s", tb.Name, tb.Result, want, tb.Reason)
		}
		removed += tb.Removed
	}
	if len(out.Tables) != n {
		return 0, fmt.Errorf("reaper retain reported %d tables, want %d", len(out.Tables), n)
	}
	return removed, nil
}

// cleanupRow is a table of retention_bench.mjs cleanup's report.
type cleanupRow struct {
	Name    string `json:"name"`
	Removed int    `json:"old_versions_removed"`
}

// cleanupReport reads retention_bench.mjs cleanup's report: the loop's
// own time and its tables.
func cleanupReport(stdout []byte) (time.Duration, []cleanupRow, error) {
	var out struct {
		Ms     float64      `json:"ms"`
		Tables []cleanupRow `json:"tables"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return 0, nil, fmt.Errorf("retention_bench.mjs cleanup output: %w: %s", err, tail(string(stdout), 400))
	}
	return time.Duration(out.Ms * float64(time.Millisecond)), out.Tables, nil
}

// keys lists every key under prefix, sorted.
func (g *gateway) keys(ctx context.Context, bucket, prefix string) ([]string, error) {
	p := s3.NewListObjectsV2Paginator(g.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	slices.Sort(out)
	return out, nil
}

// diffKeys names the first few keys one sorted list has and the other has
// not ("" when equal).
func diffKeys(a, b []string) string {
	var d []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			d = append(d, "only the first left "+k)
		}
	}
	for _, k := range b {
		if _, ok := slices.BinarySearch(a, k); !ok {
			d = append(d, "only the second left "+k)
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
	}
	return strings.Join(d, "; ")
}
