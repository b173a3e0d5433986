package main

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	rconfig "github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lance"
)

// The section of BENCHMARKS.md the idle-table scenarios own.
const (
	retIdleBegin = "<!-- retention-idle: begin (go run ./bench --only retention-idle rewrites this section alone) -->"
	retIdleEnd   = "<!-- retention-idle: end -->"
)

// idleRequestsTarget is issue 36's bound on the daemon's steady state: at
// most one request per idle table and pass, on average.
const idleRequestsTarget = 1.0

func (r *report) idleFind(scen, contender string) *retSeries {
	return findSeries(r.RetentionIdle, scen, contender)
}

func (r *report) idleScenarios() []string { return seriesScenarios(r.RetentionIdle) }

func (r *report) idleDaemons(scen string) []*idleDaemon {
	var out []*idleDaemon
	for _, d := range r.IdleDaemons {
		if d.Scenario == scen {
			out = append(out, d)
		}
	}
	return out
}

// durations are the passes' durations.
func durations(ps []daemonPass) []time.Duration {
	var out []time.Duration
	for _, p := range ps {
		out = append(out, p.Duration)
	}
	return out
}

// perTable is the most a steady pass sent the server, per table.
func (d *idleDaemon) perTable() float64 {
	var most int64
	for _, p := range d.steady() {
		most = max(most, sum(p.Server))
	}
	return float64(most) / float64(d.Tables)
}

// retentionIdleTargets holds, on each size: reaper retain's whole process
// and the daemon's median steady pass to retentionTarget of the client's
// cleanup loop (its call, without Node's start); the daemon's steady
// passes to idleRequestsTarget requests a table; and reaper's peak RSS at
// the largest size to the shipped memory limit.
func (r *report) retentionIdleTargets() []target {
	var ts []target
	scens := r.idleScenarios()
	for _, scen := range scens {
		rs, lc := r.idleFind(scen, contReaper), r.idleFind(scen, contLance)
		if rs == nil || lc == nil {
			continue
		}
		ratio := rs.wall().Seconds() / lc.call().Seconds()
		ts = append(ts, target{
			Name: fmt.Sprintf("idle retention, S3, %d tables: reaper retain <= %.1fx the client's optimize loop", rs.Tables, retentionTarget),
			Want: fmt.Sprintf("<= %s (client's call median %s)", fmtDur(time.Duration(retentionTarget*float64(lc.call()))), fmtDur(lc.call())),
			Got:  fmt.Sprintf("%s (%.2fx; %.1f requests a table against the client's %.1f)", fmtDur(rs.wall()), ratio, perTable(rs), perTable(lc)),
			Pass: ratio <= retentionTarget,
		})
		for _, d := range r.idleDaemons(scen) {
			st := medianOf(durations(d.steady()))
			ratio := st.Seconds() / lc.call().Seconds()
			ts = append(ts, target{
				Name: fmt.Sprintf("idle retention, S3, %d tables: reaper run's steady pass (%s) <= %.1fx the client's optimize loop", d.Tables, d.Regime, retentionTarget),
				Want: fmt.Sprintf("<= %s", fmtDur(time.Duration(retentionTarget*float64(lc.call())))),
				Got:  fmt.Sprintf("%s (%.3fx; median of %d passes after the first)", fmtDur(st), ratio, len(d.steady())),
				Pass: ratio <= retentionTarget,
			}, target{
				Name: fmt.Sprintf("idle retention, S3, %d tables: reaper run's steady pass (%s), requests per table", d.Tables, d.Regime),
				Want: fmt.Sprintf("<= %.0f (a pass's requests / tables)", idleRequestsTarget),
				Got: fmt.Sprintf("%.4f (the most of %d passes: %s)%s", d.perTable(), len(d.steady()), fmtOps(mostRequests(d.steady())),
					r.netOfRoot(d)),
				Pass: d.perTable() <= idleRequestsTarget,
			})
		}
	}
	if len(scens) > 0 && r.IdleLimits.LimitBytes > 0 {
		scen := scens[len(scens)-1]
		if rs := r.idleFind(scen, contReaper); rs != nil {
			peak, who := rs.maxRSS(), "reaper retain"
			for _, d := range r.idleDaemons(scen) {
				if d.MaxRSS > peak {
					peak, who = d.MaxRSS, "reaper run ("+d.Regime+")"
				}
			}
			ts = append(ts, target{
				Name: fmt.Sprintf("peak RSS, idle retention of %d tables, reaper retain and reaper run", rs.Tables),
				Want: fmt.Sprintf("< %s (the shipped memory limit, %s)", mib(r.IdleLimits.LimitBytes), r.IdleLimits.Limit),
				Got:  fmt.Sprintf("%s (%s)", mib(peak), who),
				Pass: peak < r.IdleLimits.LimitBytes,
			})
		}
	}
	return ts
}

// rootOwn is what a steady pass over scen sends whatever its tables
// hold: the young regime's steady pass, which reads no table (-1 without
// one).
func (r *report) rootOwn(scen string) int64 {
	for _, d := range r.idleDaemons(scen) {
		if d.Regime == "young" && len(d.steady()) > 0 {
			return sum(mostRequests(d.steady()))
		}
	}
	return -1
}

// netOfRoot says what d's steady pass costs a table once the root's own
// requests (rootOwn) are taken out ("" for the young regime, or without
// it).
func (r *report) netOfRoot(d *idleDaemon) string {
	own := r.rootOwn(d.Scenario)
	if d.Regime == "young" || own < 0 {
		return ""
	}
	most := sum(mostRequests(d.steady()))
	return fmt.Sprintf("; %.4f a table net of the %d requests a pass sends for the root whatever its tables hold (the young regime's steady pass)",
		float64(most-own)/float64(d.Tables), own)
}

// perTable is a contender's median run's server requests per table.
func perTable(s *retSeries) float64 { return float64(sum(s.requests())) / float64(s.Tables) }

// mostRequests is the server count of the pass that sent the most.
func mostRequests(ps []daemonPass) map[string]int64 {
	var most map[string]int64
	for _, p := range ps {
		if most == nil || sum(p.Server) > sum(most) {
			most = p.Server
		}
	}
	return most
}

// retentionIdleSection renders the idle scenarios between their markers.
func (r *report) retentionIdleSection() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n\n## Idle tables: the LanceDB client's cleanup loop, `reaper retain` and `reaper run`'s steady state\n\n", retIdleBegin)
	b.WriteString(r.ranAlone("retention-idle"))
	files, versions := 0, 0
	if len(r.RetentionIdle) > 0 {
		s := r.RetentionIdle[0]
		files, versions = s.Files/s.Tables, s.Versions
	}
	w("A root of 1,000 or 10,000 small tables, none with a version to remove: the fleet between two passes. Each table was written by the LanceDB client (@lancedb/lancedb %s, test/interop/js/retention_bench.mjs build-idle): created with 40 rows, appended 40, one row deleted, then compacted until a compaction makes no version (so `optimize` finds nothing to compact): %d versions and %d files a table. The tables are real LanceDB tables, not internal/faketable's: the client's cleanup must open them, and it builds 10,000 in a few minutes here (built once, cached under `.bench/fixtures/`, then `cp -a` into one versitygw bucket). Nobody removes anything (the cutoff is older than every version), so every run reads that one copy; its keys are compared with the fixture's after every run, and were equal in every run of this report. Requests are counted from versitygw's access log.\n\n",
		r.Tools.Versions["lancedb"], versions, files)
	w("- **lancedb**: one Node process opening each table in turn and calling `optimize({cleanupOlderThan: cutoff})` (retention_bench.mjs cleanup, as in the retention section). *call* is that loop alone, without Node's start and connect.\n")
	w("- **reaper retain**: `reaper retain --before <cutoff>` over the root, one process: the root's listing, then each table's directories listed and its manifests read (%d at a time), limits.table_concurrency tables at a time; nothing to do, so no lease. GOMEMLIMIT=%s, as shipped.\n", lance.ReadConcurrency, r.IdleLimits.GoMemLimit)
	w("- **reaper run**: the daemon, retention enabled on the root (the configuration is below), same GOMEMLIMIT. Its first pass reads every table as `reaper retain` does and remembers each idle one (internal/worker/retain_memo.go, docs/RETENTION.md \"An idle table\"); the passes after it are its steady state. A pass's duration, its own request count and its tables' results are read from /metrics when `reaper_passes_total` grows (`reaper_pass_duration_seconds`, `reaper_s3_http_requests_total`, `reaper_retention_tables_total`: every table `nothing_to_do` in every pass), the server's count from versitygw's log between two passes. The schedule leaves the first pass time to end before the first tick, so every pass starts on a tick and nothing runs while the harness reads. Two regimes:\n")
	for _, rg := range idleRegimes {
		w("  - *%s*: %s.\n", rg.Name, rg.Why)
	}
	w("\n")
	if r.RetentionIdleLoad != "" {
		w("The machine's load average (1, 5, 15 min) when these scenarios started: %s, on its %d cores: other processes were running, so the walls carry their noise (min and max say how much); the contenders ran alternately under the same load.\n\n", r.RetentionIdleLoad, runtime.NumCPU())
	}
	w("| scenario | contender | runs | median wall | min | max | call (median) | reaper / this | CPU: own / versitygw's | peak RSS | requests (server, median run) | a table |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, scen := range r.idleScenarios() {
		rs := r.idleFind(scen, contReaper)
		for _, name := range []string{contReaper, contLance} {
			s := r.idleFind(scen, name)
			if s == nil {
				continue
			}
			call, vs := "—", "—"
			if name == contLance {
				call = fmtDur(s.call())
				if rs != nil {
					vs = fmt.Sprintf("%.2fx of the call, %.2fx of the process", rs.wall().Seconds()/s.call().Seconds(), rs.wall().Seconds()/s.wall().Seconds())
				}
			}
			label := "reaper retain"
			if name == contLance {
				label = "lancedb"
			}
			w("| %s (%d tables, %d files) | %s | %d | %s | %s | %s | %s | %s | %s | %s | %d: %s | %.2f |\n", scen, s.Tables, s.Files, label, len(s.Samples),
				fmtDur(s.wall()), fmtDur(slices.Min(s.walls())), fmtDur(slices.Max(s.walls())), call, vs, s.cpus(), mib(s.maxRSS()),
				sum(s.requests()), fmtOps(s.requests()), perTable(s))
		}
	}
	w("\n%s", r.idleOwnCounts())
	w("\n| scenario | reaper run | pass | duration | CPU: own / versitygw's | requests (server) | a table | reaper's own count | peak RSS of the run |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range r.IdleDaemons {
		for _, p := range d.Passes {
			what := fmt.Sprint(p.Number)
			if p.Number == 1 {
				what = "1 (reads every table)"
			}
			own := "same"
			if !maps.Equal(p.Client, p.Server) {
				own = fmt.Sprintf("%d: %s", sum(p.Client), fmtOps(p.Client))
			}
			w("| %s | %s, @every %s | %s | %s | %s / %s | %d: %s | %.4f | %s | %s |\n", d.Scenario, d.Regime, d.Interval, what, fmtDur(p.Duration),
				fmtDur(p.CPU), fmtDur(p.ServerCPU), sum(p.Server), fmtOps(p.Server), float64(sum(p.Server))/float64(d.Tables), own, mib(d.MaxRSS))
		}
	}
	if ts := r.retentionIdleTargets(); r.Config.Only == "retention-idle" && len(ts) > 0 {
		w("\n| target | wanted | measured | result |\n|---|---|---|---|\n")
		for _, t := range ts {
			w("| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, verdict(t.Pass))
		}
	}
	w("\n%s", r.retentionIdleAnalysis())
	w("\n```\n")
	for _, s := range r.RetentionIdle {
		if s.Command != "" && len(s.Samples) > 0 {
			w("# %s, %s\n%s\n", s.Scenario, s.Contender, r.repoRel(s.Command))
		}
	}
	for _, d := range r.IdleDaemons {
		if d.Command == "" {
			continue
		}
		w("# %s, reaper run (%s)\n%s\n# with this configuration:\n%s", d.Scenario, d.Regime, d.Command, prefixLines(d.Config, "#   "))
	}
	w("```\n\n%s\n", retIdleEnd)
	return b.String()
}

func prefixLines(s, p string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(p + l + "\n")
	}
	return b.String()
}

// idleOwnCounts compares reaper retain's own request count (--textfile)
// with the server's, run by run.
func (r *report) idleOwnCounts() string {
	runs, differ := 0, []string{}
	for _, s := range r.RetentionIdle {
		if s.Contender != contReaper {
			continue
		}
		for i, x := range s.Samples {
			if x.Client == nil {
				continue
			}
			runs++
			if !maps.Equal(x.Client, x.Server) {
				differ = append(differ, fmt.Sprintf("%s run %d: %d (%s) against the server's %d", s.Scenario, i+1, sum(x.Client), fmtOps(x.Client), sum(x.Server)))
			}
		}
	}
	switch {
	case runs == 0:
		return ""
	case len(differ) == 0:
		return fmt.Sprintf("reaper retain's own count (`reaper_s3_http_requests_total`, written with --textfile) equals versitygw's, operation for operation, in all %d runs.\n", runs)
	}
	return "reaper retain's own count (`reaper_s3_http_requests_total`, --textfile) differs from versitygw's: " + strings.Join(differ, "; ") + ".\n"
}

// serverTimes is the server's mean time a request by operation ("" when
// not measured).
func serverTimes(count, ms map[string]int64) string {
	if len(ms) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		if count[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", k, float64(ms[k])/float64(count[k])))
		}
	}
	return strings.Join(parts, ", ")
}

// perTableOps is a request count divided by tables, by operation.
func perTableOps(m map[string]int64, tables int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(tables)))
	}
	return strings.Join(parts, ", ")
}

// retentionIdleAnalysis says, from the run's numbers, what each contender
// spends on an idle table, and why a target is missed.
func (r *report) retentionIdleAnalysis() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	for _, scen := range r.idleScenarios() {
		rs, lc := r.idleFind(scen, contReaper), r.idleFind(scen, contLance)
		if rs == nil || lc == nil {
			continue
		}
		w("**%s, one-shot.** A table costs the client %s (%.1f ms of its loop, one table after another) and `reaper retain` %s (%.1f ms of its wall, %d tables at a time): %.2fx the client's call.",
			scen, perTableOps(lc.requests(), lc.Tables), lc.call().Seconds()*1000/float64(lc.Tables),
			perTableOps(rs.requests(), rs.Tables), rs.wall().Seconds()*1000/float64(rs.Tables), rconfig.Default().Limits.TableConcurrency,
			rs.wall().Seconds()/lc.call().Seconds())
		if srv := medianOf(serverCPUs(rs)); srv > 0 {
			w(" During reaper's run versitygw spent %s of CPU (%.2f cores busy on average) and reaper %s; during the client's, versitygw %s (%.2f cores) and Node %s.",
				fmtDur(srv), srv.Seconds()/rs.wall().Seconds(), fmtDur(medianOf(ownCPUs(rs))),
				fmtDur(medianOf(serverCPUs(lc))), medianOf(serverCPUs(lc)).Seconds()/lc.wall().Seconds(), fmtDur(medianOf(ownCPUs(lc))))
		}
		if t := serverTimes(rs.Samples[0].Server, rs.Samples[0].ServerTime); t != "" {
			w(" versitygw's own time a request (its access log, reaper's first run): %s; in the client's first run: %s.", t,
				serverTimes(lc.Samples[0].Server, lc.Samples[0].ServerTime))
		}
		if rs.wall().Seconds()/lc.call().Seconds() > retentionTarget {
			w(" A one-shot process remembers nothing: it must read every table to find it idle, so it sends about as many requests as the client (each managed directory listed, every manifest read), and what it gains is concurrency, bounded here by the %d cores the server, both contenders and the machine's other work share. A fifth of the client's time would take a fifth of its requests: a table's files in one listing instead of one per directory, or the memo of the daemon below, which a one-shot cannot keep.", runtime.NumCPU())
		}
		w("\n\n")
		for _, d := range r.idleDaemons(scen) {
			st := d.steady()
			if len(st) == 0 {
				continue
			}
			most := mostRequests(st)
			w("**%s, reaper run (%s).** ", scen, d.Regime)
			if f := d.first(); f != nil {
				w("Its first pass read every table (%d requests, %s); ", sum(f.Server), fmtDur(f.Duration))
			}
			w("each pass after it measured sent at most %d requests (%s) in %s median: %s a table.",
				sum(most), fmtOps(most), fmtDur(medianOf(durations(st))), perTableOps(most, d.Tables))
			if own := r.rootOwn(scen); d.Regime != "young" && own >= 0 {
				w(" Of those, %d are the root's, whatever its tables hold (the young regime's steady pass: the root's listing, a page per 1,000 entries, and its switches); the rest, %.4f a table, are one listing of `_versions/` a table, which is what the memo needs when every version is past the cutoff: only that listing shows a write that could make one removable.",
					own, float64(sum(most)-own)/float64(d.Tables))
				if d.perTable() > idleRequestsTarget {
					w(" The target counts the root's requests too: %.4f a table in all, %.2f%% over one.", d.perTable(), (d.perTable()-1)*100)
				}
			}
			w("\n\n")
		}
	}
	return b.String()
}

func serverCPUs(s *retSeries) []time.Duration {
	var out []time.Duration
	for _, x := range s.Samples {
		out = append(out, x.ServerCPU)
	}
	return out
}

func ownCPUs(s *retSeries) []time.Duration {
	var out []time.Duration
	for _, x := range s.Samples {
		out = append(out, x.CPU)
	}
	return out
}
