package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
)

// This file owns the version-reading scenarios (issue 27, item 6): reading
// every version of one table of 1,000 and 10,000 versions, nothing deleted.
// reaper plans (`reaper retain --dry-run`: a listing of the table's
// directories and every manifest read once), the LanceDB client lists the
// versions (openTable, then listVersions(): it reads every manifest). Both
// read the same copy of the same fixture, written by the client
// (retention_bench.mjs build, cached as the retention scenarios' are); a
// read changes nothing, so every run reads one copy.

// The section of BENCHMARKS.md the read scenarios own.
const (
	retReadBegin = "<!-- retention-read: begin (go run ./bench --only retention-read rewrites this section alone) -->"
	retReadEnd   = "<!-- retention-read: end -->"
)

// readShape is the fixture of n versions: the retention scenarios' single
// table, n versions long.
func readShape(n int) retentionShape {
	return retentionShape{Name: fmt.Sprintf("read-%d", n), Tables: 1, Versions: n, DeleteFrags: 24, UpdateFrags: 12, CompactEvery: 400, KeepFraction: 0.05}
}

// retentionReadScenarios runs the read scenarios on S3 (gw) and on the
// local disk, as c asks.
func retentionReadScenarios(ctx context.Context, c config, t tools, gw *gateway, rep *report, checkpoint func() error) error {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil && len(c.RetentionRead) > 0 {
		rep.RetentionReadLoad = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	for _, n := range c.RetentionRead {
		shape := readShape(n)
		fx, err := cachedFixture(ctx, c, t, shape)
		if err != nil {
			return err
		}
		for _, where := range c.Retention {
			if err := retentionRead(ctx, c, t, gw, where, shape, fx, rep); err != nil {
				return err
			}
			if err := checkpoint(); err != nil {
				return err
			}
		}
	}
	return nil
}

// retentionRead measures both contenders on one copy of fx, on S3 or the
// local disk, c.RetentionReps times each, alternating.
func retentionRead(ctx context.Context, c config, t tools, gw *gateway, where string, shape retentionShape, fx retentionFixture, rep *report) error {
	scen := "read-" + where + "/" + strings.TrimPrefix(shape.Name, "read-")
	uri, flags, opts := fx.Dir, []string(nil), map[string]string(nil)
	if where == "s3" {
		bucket := "bench-" + shape.Name
		dir, err := gw.createBucket(ctx, bucket)
		if err != nil {
			return err
		}
		defer gw.deleteBucket(ctx, bucket)
		if err := copyTables(ctx, fx, filepath.Join(dir, "db")); err != nil {
			return err
		}
		syscall.Sync()
		uri, flags, opts = "s3://"+bucket+"/db", storageFlags(gw), gw.optionsMap()
	}
	byName := map[string]*retSeries{}
	for _, name := range []string{contReaper, contLance} {
		byName[name] = &retSeries{Scenario: scen, Contender: name, Tables: 1, Versions: fx.Tables[0].Versions, Files: fx.Files}
		rep.RetentionRead = append(rep.RetentionRead, byName[name])
	}
	for r := range c.RetentionReps {
		for _, name := range rotate([]string{contReaper, contLance}, r) {
			argv := readArgv(t, name, uri, fx, flags, opts)
			off := int64(0)
			if where == "s3" {
				off = gw.logOffset()
			}
			s, err := runRead(ctx, name, argv, fx)
			if err != nil {
				return fmt.Errorf("%s %s: %w", scen, name, err)
			}
			if where == "s3" {
				if s.Server, err = gw.requestsSince(off, strings.TrimPrefix(strings.TrimSuffix(uri, "/db"), "s3://")); err != nil {
					return err
				}
			}
			byName[name].Samples = append(byName[name].Samples, s)
			byName[name].Command = redact(shellQuote(argv))
			logf("%s %-7s rep %d: %s (call %s), %d requests", scen, name, r+1, s.Wall.Round(time.Millisecond), s.Call.Round(time.Millisecond), sum(s.Server))
		}
	}
	return nil
}

// readArgv is contender name's command reading every version of the
// fixture's table at uri.
func readArgv(t tools, name, uri string, fx retentionFixture, flags []string, opts map[string]string) []string {
	table := fx.names()[0]
	if name == contReaper {
		argv := append([]string{t.Reaper, "retain", "--root", uri}, flags...)
		return append(argv, "--before", fx.cutoff().UTC().Format(time.RFC3339Nano), "--allow-short-ttl", "--dry-run", "-o", "json", "--log-level", "warn", table)
	}
	spec, _ := json.Marshal(map[string]any{"storage_options": opts, "table": table})
	return []string{t.Node, t.RetentionJS, "versions", uri, string(spec)}
}

// runRead runs one contender and checks that it read every version:
// reaper's plan counts them all, the client lists them all.
func runRead(ctx context.Context, name string, argv []string, fx retentionFixture) (retSample, error) {
	res, err := measure(ctx, nil, argv...)
	if err != nil {
		return retSample{}, err
	}
	s := retSample{Wall: res.Wall, MaxRSS: res.MaxRSS}
	want := fx.Tables[0].Versions
	if name == contReaper {
		var out struct {
			Tables []struct {
				Result   string   `json:"result"`
				Reason   string   `json:"reason"`
				Versions int      `json:"versions"`
				Removed  []uint64 `json:"versions_removed"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(res.Stdout, &out); err != nil {
			return s, fmt.Errorf("reaper retain --dry-run output: %w: %s", err, tail(string(res.Stdout), 400))
		}
		if len(out.Tables) != 1 || out.Tables[0].Result != "planned" || out.Tables[0].Versions != want {
			return s, fmt.Errorf("reaper retain --dry-run: want one table planned over %d versions: %s", want, tail(string(res.Stdout), 400))
		}
		s.VersionsRemoved = len(out.Tables[0].Removed)
		return s, nil
	}
	var out struct {
		Ms       float64 `json:"ms"`
		Versions int     `json:"versions"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil {
		return s, fmt.Errorf("retention_bench.mjs versions output: %w: %s", err, tail(string(res.Stdout), 400))
	}
	if out.Versions != want {
		return s, fmt.Errorf("listVersions() listed %d versions, want %d", out.Versions, want)
	}
	s.Call = time.Duration(out.Ms * float64(time.Millisecond))
	return s, nil
}

// retentionReadSection renders the read scenarios between their markers.
func (r *report) retentionReadSection() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n\n## Reading every version: `reaper retain --dry-run` against the LanceDB client's `listVersions()`\n\n", retReadBegin)
	b.WriteString(r.ranAlone("retention-read"))
	w("One table written by the LanceDB client (@lancedb/lancedb %s, test/interop/js/retention_bench.mjs build, as the retention section's single table: appends, deletes and updates, a compaction every 400 versions), 1,000 and 10,000 versions long, about 10 files a version. Nothing is deleted: both contenders read the same copy, on S3 (versitygw, one bucket holding a `cp -a` copy) and on the local disk (the cached fixture itself).\n\n", r.Tools.Versions["lancedb"])
	w("- **reaper**: `reaper retain --dry-run --before <cutoff> t0`, the whole process: the root's listing, a listing of each of the table's directories, every manifest read once (%d at a time), the plan, and its JSON (every file the plan would delete) written out.\n", lance.ReadConcurrency)
	w("- **lancedb**: one Node process: `openTable` then `listVersions()`, which reads every manifest for its version, timestamp and metadata. *call* is those two calls alone, without Node's start and connect. The client offers no dry run of its cleanup (`optimize` deletes), so this is the nearest read-only measure: it reads every manifest as reaper does, but lists only `_versions/` (reaper lists every directory Lance's cleanup manages, `_deletions/` and `data/` included, to plan) and plans nothing.\n\n")
	if r.RetentionReadLoad != "" {
		w("The machine's load average (1, 5, 15 min) when the run started: %s, on its %d cores: other processes were running, so the walls carry their noise (min and max say how much); both contenders ran alternately under the same load.\n\n", r.RetentionReadLoad, runtime.NumCPU())
	}
	w("| scenario | contender | runs | median wall | min | max | call (median) | reaper / this | versions | peak RSS | requests (server, median run) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var scens []string
	for _, s := range r.RetentionRead {
		if len(s.Samples) > 0 && !slices.Contains(scens, s.Scenario) {
			scens = append(scens, s.Scenario)
		}
	}
	find := func(scen, name string) *retSeries {
		for _, s := range r.RetentionRead {
			if s.Scenario == scen && s.Contender == name && len(s.Samples) > 0 {
				return s
			}
		}
		return nil
	}
	for _, scen := range scens {
		rs := find(scen, contReaper)
		for _, name := range []string{contReaper, contLance} {
			s := find(scen, name)
			if s == nil {
				continue
			}
			call, vs, req := "—", "—", "—"
			if name == contLance {
				call = fmtDur(s.call())
				if rs != nil {
					vs = fmt.Sprintf("%.2fx of the call, %.2fx of the process", rs.wall().Seconds()/s.call().Seconds(), rs.wall().Seconds()/s.wall().Seconds())
				}
			}
			if s.Samples[0].Server != nil {
				req = fmt.Sprintf("%d: %s", sum(s.requests()), fmtOps(s.requests()))
			}
			w("| %s (%d files) | %s | %d | %s | %s | %s | %s | %s | %d | %s | %s |\n", scen, s.Files, name, len(s.Samples), fmtDur(s.wall()),
				fmtDur(slices.Min(s.walls())), fmtDur(slices.Max(s.walls())), call, vs, s.Versions, mib(s.maxRSS()), req)
		}
	}
	w("\n%s", readAnalysis(scens, find))
	w("\n```\n")
	for _, s := range r.RetentionRead {
		if s.Command != "" && len(s.Samples) > 0 {
			w("# %s, %s\n%s\n", s.Scenario, s.Contender, r.repoRel(s.Command))
		}
	}
	w("```\n\n%s\n", retReadEnd)
	return b.String()
}

// readAnalysis says, from the run's numbers, what the two contenders
// spent: requests alike, so the difference is the process's own work.
func readAnalysis(scens []string, find func(scen, name string) *retSeries) string {
	var b strings.Builder
	for _, scen := range scens {
		rs, lc := find(scen, contReaper), find(scen, contLance)
		if rs == nil || lc == nil {
			continue
		}
		fmt.Fprintf(&b, "**%s.** reaper %s against the client's %s (call) and %s (process): %.2fx of the call", scen,
			fmtDur(rs.wall()), fmtDur(lc.call()), fmtDur(lc.wall()), rs.wall().Seconds()/lc.call().Seconds())
		if rs.Samples[0].Server != nil {
			fmt.Fprintf(&b, "; %d requests against %d (GetObject %d against %d: each manifest once on both sides)",
				sum(rs.requests()), sum(lc.requests()), rs.requests()["GetObject"], lc.requests()["GetObject"])
		}
		fmt.Fprintf(&b, "; peak RSS %s against %s. reaper keeps what every version references, as ids of the table's file names, to plan (the client's listVersions keeps a version's number and time), and writes the plan's every file as JSON.\n\n",
			mib(rs.maxRSS()), mib(lc.maxRSS()))
	}
	return b.String()
}
