package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	rconfig "github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lance"
)

// The retention section of BENCHMARKS.md sits between these markers, so
// that `go run ./bench --only retention` rewrites it alone and a full run
// without the retention scenarios keeps the last one.
const (
	retBegin = "<!-- retention: begin (go run ./bench --only retention rewrites this section alone) -->"
	retEnd   = "<!-- retention: end -->"
)

// retentionTarget is issue 36's bound: reaper's retention at most a fifth
// of the client's cleanup time on S3, in every case (one table of about
// 2,000 versions, 100 tables of 100, and the idle tables of
// retention_idle.go).
const retentionTarget = 0.2

func (r *report) retFind(scen, contender string) *retSeries {
	return findSeries(r.Retention, scen, contender)
}

func (r *report) retScenarios() []string { return seriesScenarios(r.Retention) }

// findSeries is contender's measured series of scen in list, or nil.
func findSeries(list []*retSeries, scen, contender string) *retSeries {
	for _, s := range list {
		if s.Scenario == scen && s.Contender == contender && len(s.Samples) > 0 {
			return s
		}
	}
	return nil
}

// seriesScenarios lists the measured scenarios of list, in order.
func seriesScenarios(list []*retSeries) []string {
	var out []string
	for _, s := range list {
		if len(s.Samples) > 0 && !slices.Contains(out, s.Scenario) {
			out = append(out, s.Scenario)
		}
	}
	return out
}

func medianOf(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	if len(ds) == 0 {
		return 0
	}
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

func (s *retSeries) walls() []time.Duration {
	var out []time.Duration
	for _, x := range s.Samples {
		out = append(out, x.Wall)
	}
	return out
}

func (s *retSeries) wall() time.Duration { return medianOf(s.walls()) }

// call is the client's cleanup loop alone (median); reaper's is its wall.
func (s *retSeries) call() time.Duration {
	var out []time.Duration
	for _, x := range s.Samples {
		if x.Call == 0 {
			return s.wall()
		}
		out = append(out, x.Call)
	}
	return medianOf(out)
}

// requests is the median run's server-side count.
func (s *retSeries) requests() map[string]int64 {
	xs := slices.Clone(s.Samples)
	slices.SortFunc(xs, func(a, b retSample) int { return int(sum(a.Server) - sum(b.Server)) })
	return xs[len(xs)/2].Server
}

// cpuMedians are the runs' median own CPU time and versitygw's during
// them (0 when not measured).
func (s *retSeries) cpuMedians() (own, srv time.Duration) {
	var owns, srvs []time.Duration
	for _, x := range s.Samples {
		owns, srvs = append(owns, x.CPU), append(srvs, x.ServerCPU)
	}
	return medianOf(owns), medianOf(srvs)
}

// cpus is the median run's own CPU time and versitygw's during it,
// "—" when not measured.
func (s *retSeries) cpus() string {
	own, srv := s.cpuMedians()
	if own == 0 {
		return "—"
	}
	if srv == 0 {
		return fmtDur(own)
	}
	return fmtDur(own) + " / " + fmtDur(srv)
}

func (s *retSeries) maxRSS() int64 {
	var m int64
	for _, x := range s.Samples {
		m = max(m, x.MaxRSS)
	}
	return m
}

// retentionTargets holds reaper's median wall, process start to exit, to
// retentionTarget of the client's median cleanup call (without Node's
// start: the client's most favourable figure) on each S3 scenario.
func (r *report) retentionTargets() []target {
	var ts []target
	for _, scen := range r.retScenarios() {
		if !strings.HasPrefix(scen, "retention-s3/") {
			continue
		}
		rs, lc := r.retFind(scen, contReaper), r.retFind(scen, contLance)
		if rs == nil || lc == nil {
			continue
		}
		ratio := rs.wall().Seconds() / lc.call().Seconds()
		ts = append(ts, target{
			Name: fmt.Sprintf("retention, S3, %s of %d versions, %d files: reaper <= %.1fx the client's optimize({cleanupOlderThan})", tablesN(rs.Tables), rs.Versions, rs.Files, retentionTarget),
			Want: fmt.Sprintf("<= %s (client's call median %s; whole process %s)", fmtDur(time.Duration(retentionTarget*float64(lc.call()))), fmtDur(lc.call()), fmtDur(lc.wall())),
			Got:  fmt.Sprintf("%s (%.2fx of the call; %d requests against the client's %d)", fmtDur(rs.wall()), ratio, sum(rs.requests()), sum(lc.requests())),
			Pass: ratio <= retentionTarget, Why: "See the retention section.",
		})
	}
	return ts
}

// retentionSection renders the retention scenarios between the markers.
func (r *report) retentionSection() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n\n## Version retention: `reaper retain` against the LanceDB client's cleanup\n\n", retBegin)
	b.WriteString(r.ranAlone("retention"))
	w("Tables written by the LanceDB client (@lancedb/lancedb %s, test/interop/js/retention_bench.mjs): each cycles through appending 40 rows, deleting a row of each of the newest appends (a deletion file each) and updating a row of each of the newest appends (a data file and deletion files), then pauses a second before its newest versions and compacts until a compaction makes no version. Both contenders remove every version written before the middle of that pause (the newest 5%% of the single table's versions and 10%% of each small table's stay), with Lance's defaults otherwise (unverified files kept for 7 days).\n\n", r.Tools.Versions["lancedb"])
	w("- **reaper**: `reaper retain --before <cutoff>`, one process for every table of the root: every table planned first (a listing of its directories, every manifest read once, %d at a time), then %d tables at a time (limits.table_concurrency) cleaned, each under its own lease: its retention record, then DeleteObjects of up to 1,000 keys, manifests first, several in flight (limits.delete_concurrency).\n", lance.ReadConcurrency, rconfig.Default().Limits.TableConcurrency)
	w("- **lancedb**: one Node process that opens each table in turn and calls `optimize({cleanupOlderThan: cutoff})`, what a user loops over a database today; its compaction and index steps find nothing to do. *call* is that loop alone, as the script times it, without Node's start and connect; the target compares reaper's whole process with it.\n\n")
	w("S3: versitygw as above; each run gets a fresh bucket holding a `cp -a` copy of the tables, built once and cached under `.bench/fixtures/` (versitygw reports a file's mtime as its LastModified, so both sides see the times the client wrote). Requests counted server-side, from versitygw's access log (`reaper retain` has no metrics file). Local disk: each run gets tables built afresh, since a copy is not the same table to reaper there (its local store dates a file by the later of mtime and ctime, and a copy's ctime is the copy's time, so every copied file would look newer than the versions and stay, where the client, reading mtime alone, deletes it). After every run the files left are compared: on S3 key for key between the two contenders of a repetition, locally by count; they were equal in every run of this report.\n\n")
	w("| scenario | contender | runs | median wall | min | max | call (median) | reaper / this | versions removed | files left | CPU: own / versitygw's | peak RSS | requests (server, median run) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, scen := range r.retScenarios() {
		rs := r.retFind(scen, contReaper)
		for _, s := range r.Retention {
			if s.Scenario != scen || len(s.Samples) == 0 {
				continue
			}
			call, vs, req := "—", "—", "—"
			if s.Contender == contLance {
				call = fmtDur(s.call())
				if rs != nil {
					vs = fmt.Sprintf("%.2fx of the call, %.2fx of the process", rs.wall().Seconds()/s.call().Seconds(), rs.wall().Seconds()/s.wall().Seconds())
				}
			}
			if s.Samples[0].Server != nil {
				req = fmt.Sprintf("%d: %s", sum(s.requests()), fmtOps(s.requests()))
			}
			x := s.Samples[0]
			w("| %s (%s, %d versions each, %d files) | %s | %d | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s |\n",
				scen, tablesN(s.Tables), s.Versions, s.Files, s.Contender, len(s.Samples), fmtDur(s.wall()), fmtDur(slices.Min(s.walls())), fmtDur(slices.Max(s.walls())),
				call, vs, x.VersionsRemoved, x.FilesLeft, s.cpus(), mib(s.maxRSS()), req)
		}
	}
	if ts := r.retentionTargets(); r.Config.Only == "retention" && len(ts) > 0 {
		w("\n| target | wanted | measured | result |\n|---|---|---|---|\n")
		for _, t := range ts {
			w("| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, verdict(t.Pass))
		}
	}
	w("\n%s", r.retentionAnalysis())
	w("\n```\n")
	for _, s := range r.Retention {
		if s.Command != "" && len(s.Samples) > 0 {
			w("# %s, %s\n%s\n", s.Scenario, s.Contender, r.repoRel(s.Command))
		}
	}
	w("```\n\n%s\n", retEnd)
	return b.String()
}

// retentionAnalysis says, from this run's numbers, where the difference
// comes from: requests per deleted file, and for many tables the time per
// table.
func (r *report) retentionAnalysis() string {
	var b strings.Builder
	for _, scen := range r.retScenarios() {
		rs, lc := r.retFind(scen, contReaper), r.retFind(scen, contLance)
		if rs == nil || lc == nil {
			continue
		}
		deleted := rs.Files - rs.Samples[0].FilesLeft
		fmt.Fprintf(&b, "**%s.** %d files deleted", scen, deleted)
		if rs.Samples[0].Server != nil {
			rd, ld := rs.requests()["DeleteObjects"], lc.requests()["DeleteObjects"]
			fmt.Fprintf(&b, ": reaper sent %d DeleteObjects (%.0f keys each) and %d requests in all (%d GetObject: each manifest once); the client %d DeleteObjects (%.1f keys each) and %d requests in all, %.2f per deleted file",
				rd, float64(deleted)/float64(max(rd, 1)), sum(rs.requests()), rs.requests()["GetObject"],
				ld, float64(deleted)/float64(max(ld, 1)), sum(lc.requests()), float64(sum(lc.requests()))/float64(max(deleted, 1)))
		}
		if rs.Tables > 1 {
			fmt.Fprintf(&b, ". `reaper retain` plans every table, then cleans %d at a time, each under its own lease with its own guard reads: %s of its wall a table, against %s a table of the client's loop, which cleans one after another", rconfig.Default().Limits.TableConcurrency, fmtDur(rs.wall()/time.Duration(rs.Tables)), fmtDur(lc.call()/time.Duration(lc.Tables)))
		}
		if own, srv := rs.cpuMedians(); own > 0 && srv > 0 && lc.call() > 0 {
			cores := runtime.NumCPU()
			bound := (own + srv) / time.Duration(cores)
			fmt.Fprintf(&b, ". During reaper's median run it spent %s of CPU and versitygw %s: on these %d cores, which the server, reaper and the machine's other work share, no schedule of that work ends before %s, %.2fx of the client's call",
				fmtDur(own), fmtDur(srv), cores, fmtDur(bound), bound.Seconds()/lc.call().Seconds())
			if slack := rs.wall() - bound; float64(slack) < 0.15*float64(bound) {
				b.WriteString("; reaper's wall is within 15% of that bound, so what it can still gain here is in requests (versitygw's CPU goes with them), not in waiting less")
			} else {
				why := "one table's phases run one after another: its listing and manifest reads, then its deletes"
				if rs.Tables > 1 {
					why = "every table is planned before the first is cleaned, and the cleaning ends with the slowest tables"
				}
				fmt.Fprintf(&b, "; %s of reaper's wall is waiting that CPU does not explain (%s)", fmtDur(slack), why)
			}
		}
		b.WriteString(".\n\n")
	}
	return b.String()
}

// repoRel spells a command's paths inside the repository relative to it,
// as a reader who cloned it runs them.
func (r *report) repoRel(cmd string) string {
	if r.Config.Repo == "" {
		return cmd
	}
	return strings.ReplaceAll(cmd, r.Config.Repo+"/", "")
}

// tablesN is "one table" or "n tables".
func tablesN(n int) string {
	if n == 1 {
		return "one table"
	}
	return fmt.Sprintf("%d tables", n)
}

// shellQuote renders argv for a reader to paste into a shell.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, " {}\"'$*") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
