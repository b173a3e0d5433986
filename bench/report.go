package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// report is everything one run measured.
type report struct {
	Config       config
	Tools        tools
	Machine      machine
	Args         []string
	Started      time.Time
	Elapsed      time.Duration
	Endpoint     string
	Series       []*series
	RSSScenario  string
	Status       *series
	StatusClient map[string]int64
	Roots        []*series
	// Memory is the memory scenario's series (Case the command, Contender
	// the build), MemBinaries the builds in order (this tree's last) and
	// MemLimits the shipped limits it ran under; MemOnly: a run of that
	// scenario alone.
	Memory      []*series
	MemBinaries []string
	MemLimits   shipped
	MemOnly     bool
	Retention   []*retSeries
	// RetentionRead are the version-reading scenarios (retention_read.go).
	RetentionRead []*retSeries
	// RetentionReadLoad is /proc/loadavg's three figures when they started.
	RetentionReadLoad string
	// RetentionIdle are the idle-table scenarios' one-shot contenders,
	// IdleDaemons their `reaper run` runs (retention_idle.go),
	// RetentionIdleLoad /proc/loadavg when they started, IdleLimits the
	// shipped memory limits they ran under.
	RetentionIdle     []*retSeries
	IdleDaemons       []*idleDaemon
	RetentionIdleLoad string
	IdleLimits        shipped
	// Partial is set while scenarios remain: the report is written after
	// each one, so an interrupted full run (it takes well over an hour on
	// two cores) still leaves its finished measurements.
	Partial bool
}

func (s *series) walls() []time.Duration {
	out := make([]time.Duration, len(s.Samples))
	for i, x := range s.Samples {
		out[i] = x.Wall
	}
	slices.Sort(out)
	return out
}

func (s *series) median() time.Duration {
	w := s.walls()
	if len(w) == 0 {
		return 0
	}
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

func (s *series) min() time.Duration { return s.walls()[0] }
func (s *series) max() time.Duration { w := s.walls(); return w[len(w)-1] }

func (s *series) rate() float64 {
	return float64(s.Objects) / s.median().Seconds()
}

// maxAnon is the largest anonymous peak of the runs.
func (s *series) maxAnon() int64 {
	var m int64
	for _, x := range s.Samples {
		m = max(m, x.MaxAnon)
	}
	return m
}

func (s *series) maxRSS() int64 {
	var m int64
	for _, x := range s.Samples {
		m = max(m, x.MaxRSS)
	}
	return m
}

// requests is the median run's server-side count (runs of one contender
// send the same requests; the median run is shown when they differ).
func (s *series) requests() map[string]int64 {
	xs := slices.Clone(s.Samples)
	slices.SortFunc(xs, func(a, b sample) int { return int(sum(a.Server) - sum(b.Server)) })
	return xs[len(xs)/2].Server
}

func (s *series) maxRequests() (int64, map[string]int64) {
	var best map[string]int64
	var n int64 = -1
	for _, x := range s.Samples {
		if t := sum(x.Server); t > n {
			n, best = t, x.Server
		}
	}
	return n, best
}

func (r *report) find(scen, contender string) *series {
	for _, s := range r.Series {
		if s.Scenario == scen && s.Contender == contender {
			return s
		}
	}
	return nil
}

func (r *report) scenarios(prefix string) []string {
	var out []string
	for _, s := range r.Series {
		if strings.HasPrefix(s.Scenario, prefix) && !slices.Contains(out, s.Scenario) {
			out = append(out, s.Scenario)
		}
	}
	return out
}

func fmtOps(m map[string]int64) string {
	if len(m) == 0 {
		return "—"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// target is one checked goal.
type target struct {
	Name, Want, Got string
	Pass            bool
	Why             string // for a miss: why, and what would close it
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "**MISS**"
}

// perRoot is what a pass spends on each root whatever it holds: the plan's
// root listing, one listing of the pause switch and one HEAD of _reaper
// (an object there hides the switch: it reads as paused); the stale-lease
// sweep uses the plan's listing.
const perRoot = 3

// targets evaluates every goal the issue sets.
func (r *report) targets() []target {
	var ts []target
	ts = append(ts, r.retentionTargets()...)
	ts = append(ts, r.retentionIdleTargets()...)
	ts = append(ts, r.azureTargets()...)
	for _, scen := range r.scenarios("s3/") {
		rs := r.find(scen, "reaper")
		n := rs.Objects
		pages := int64(ceilDiv(n, 1000))
		bound := s3Floor(n)
		got, ops := rs.maxRequests()
		// The pass costs perRoot requests whatever the table count: the plan's
		// root listing and the pause check. The rest is the table's.
		table := got - perRoot
		ts = append(ts, target{
			Name: fmt.Sprintf("S3 requests per purged table of %d objects", n),
			Want: fmt.Sprintf("<= %d listings + %d batch deletes + 8 = %d", pages, pages, bound),
			Got:  fmt.Sprintf("%d (whole command %d minus %d per root: %s)", table, got, perRoot, fmtOps(ops)),
			Pass: table <= bound, Why: whyRequests,
		})
		var fastest *series
		for _, p := range r.Series {
			if p.Scenario == scen && p.Contender != "reaper" && p.Contender != floorName && (fastest == nil || p.rate() > fastest.rate()) {
				fastest = p
			}
		}
		if fastest != nil {
			ts = append(ts, target{
				Name: fmt.Sprintf("objects/s, %s: >= 1.0x fastest peer", scen),
				Want: fmt.Sprintf(">= %.0f/s (%s)", fastest.rate(), fastest.Contender),
				Got:  fmt.Sprintf("%.0f/s (%.2fx)", rs.rate(), rs.rate()/fastest.rate()),
				Pass: rs.rate() >= fastest.rate(), Why: whyRate,
			})
		}
		if fl := r.find(scen, floorName); fl != nil {
			ts = append(ts, floorTarget(scen, rs, fl))
		}
		if aws := r.find(scen, "awscli"); aws != nil {
			ts = append(ts, target{
				Name: fmt.Sprintf("objects/s, %s: >= 2x awscli", scen),
				Want: fmt.Sprintf(">= %.0f/s", 2*aws.rate()),
				Got:  fmt.Sprintf("%.0f/s (%.2fx)", rs.rate(), rs.rate()/aws.rate()),
				Pass: rs.rate() >= 2*aws.rate(), Why: whyRate,
			})
		}
	}
	ts = append(ts, r.gcsTargets()...)
	for _, scen := range r.scenarios("local/") {
		rs, rm := r.find(scen, "reaper"), r.find(scen, "rm -rf")
		if rm == nil {
			continue
		}
		ratio := rs.median().Seconds() / rm.median().Seconds()
		ts = append(ts, target{
			Name: fmt.Sprintf("local purge, %s: <= %.1fx rm -rf", scen, localTarget),
			Want: fmt.Sprintf("<= %s", fmtDur(time.Duration(localTarget*float64(rm.median())))),
			Got:  fmt.Sprintf("%s (%.2fx; min %s, max %s; rm -rf min %s, max %s)", fmtDur(rs.median()), ratio, fmtDur(rs.min()), fmtDur(rs.max()), fmtDur(rm.min()), fmtDur(rm.max())),
			Pass: ratio <= localTarget, Why: whyLocal,
		})
	}
	if rs := r.find(r.RSSScenario, "reaper"); rs != nil {
		ts = append(ts, target{
			Name: fmt.Sprintf("peak RSS purging %d local objects", rs.Objects),
			Want: "< 64 MiB", Got: fmt.Sprintf("%s (anonymous %s; the rest are the executable's own pages)", mib(rs.maxRSS()), mib(rs.maxAnon())),
			Pass: rs.maxRSS() < 64<<20, Why: whyRSS,
		})
	}
	ts = append(ts, r.memoryTargets()...)
	if r.Status != nil {
		lists := r.Status.requests()["ListObjectsV2"]
		ts = append(ts, target{
			Name: fmt.Sprintf("reaper status, root of %d tables: listings", r.Status.Objects),
			Want: "<= 11", Got: fmt.Sprintf("%d (%s)", lists, fmtOps(r.Status.requests())),
			Pass: lists <= 11, Why: whyStatus,
		})
	}
	return ts
}

// s3Floor is the request bound of one purged S3 table of n objects:
// ceil(n/1000) listings + ceil(n/1000) batch deletes + 8.
func s3Floor(n int) int64 { return int64(2*ceilDiv(n, 1000) + 8) }

// floorMax is how far reaper's median wall may exceed the floor's: the
// price of its safety protocol on one table.
const floorMax = 1.10

// floorTarget holds reaper's median wall to floorMax times the floor's,
// on the same scenario.
func floorTarget(scen string, rs, fl *series) target {
	ratio := rs.median().Seconds() / fl.median().Seconds()
	return target{
		Name: fmt.Sprintf("wall, %s: reaper / floor <= %.2fx", scen, floorMax),
		Want: fmt.Sprintf("<= %s (floor median %s, min %s, max %s)", fmtDur(time.Duration(floorMax*float64(fl.median()))), fmtDur(fl.median()), fmtDur(fl.min()), fmtDur(fl.max())),
		Got:  fmt.Sprintf("%s (%.2fx; min %s, max %s)", fmtDur(rs.median()), ratio, fmtDur(rs.min()), fmtDur(rs.max())),
		Pass: ratio <= floorMax, Why: whyFloor,
	}
}

// Explanations shown for a missed target (measured on this machine; see
// the profile notes in BENCHMARKS.md).
var (
	whyRequests = "The fixed cost per table exceeds 8 requests: see the request breakdown below for the steps that cost more than the budget."
	whyRate     = "See the S3 analysis below."
	whyLocal    = "See the local analysis below."
	whyRSS      = "See the RSS analysis below."
	whyFloor    = "The floor only lists and deletes; what reaper adds is its protocol's fixed round trips and its adaptive delete concurrency's ramp: see the S3 analysis below."
	whyStatus   = "status lists the root once with a delimiter; more pages than ceil(entries/1000) means the page size is below 1000."
)

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := r.Config
	w("# Benchmarks\n\n")
	w("Generated by `make bench` (`go run ./bench %s`), %s, in %s. Every number below comes from that one run on this machine (a re-measurement quoted in the analysis says so, with its own command); contenders ran on identical fresh copies, alternating order between repetitions. Re-running overwrites this file.\n\n",
		strings.Join(r.Args, " "), r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Round(time.Second))
	if r.Partial {
		w("**Partial: written after each scenario of a run still in progress (or interrupted); scenarios not listed below did not run yet.**\n\n")
	}
	w("## Machine and versions\n\n| | |\n|---|---|\n")
	w("| CPU | %d × %s |\n| RAM | %.1f GiB |\n| kernel | %s |\n| scratch disk | %s |\n", r.Machine.CPUs, r.Machine.CPU, r.Machine.MemGiB, r.Machine.Kernel, r.Machine.Storage)
	for _, k := range []string{"reaper", "floor", "go", "versitygw", "fake-gcs-server", "azurite", "awscli", "rclone"} {
		if v := r.Tools.Versions[k]; v != "" {
			w("| %s | %s |\n", k, v)
		}
	}
	w("\nS3 server: versitygw, posix backend, on %s (loopback, one process, its data in a temporary directory). Objects of %d bytes. Repetitions: %d per contender (S3 and local), order rotated each repetition. reaper runs with its defaults (limits.delete_concurrency = %s), peers with theirs.\n\n",
		r.Endpoint, c.ObjSize, c.Reps, concName(c.DeleteConc))

	w("## Targets\n\n| target | wanted | measured | result |\n|---|---|---|---|\n")
	for _, t := range r.targets() {
		w("| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, verdict(t.Pass))
	}

	w("\n## S3 purge: one table, reaper vs peers\n\n")
	w("Wall time of the whole command (process start to exit). objects/s = objects / median wall. *vs reaper* = the contender's median wall / reaper's median wall (above 1: reaper is faster). Requests: counted server-side from versitygw's access log (median run). *floor* is bench/floor, the reference: one listing of the table's prefix, then DeleteObjects of 1,000 keys with 16 in flight, and nothing else (no lease, marker, fence or verify).\n\n")
	for _, scen := range r.scenarios("s3/") {
		r.table(&b, scen)
	}
	r.gcsSection(&b)
	r.azureSection(&b)
	w("\n## Local purge: reaper vs rm -rf\n\n")
	w("Each run on a freshly written table (files created, then `sync`). reaper fsyncs each directory it deleted from once per phase (the manifests, then the rest: the crash-safe order); `rm -rf` fsyncs nothing.\n\n")
	for _, scen := range r.scenarios("local/") {
		r.table(&b, scen)
	}

	w("\n## Request accounting\n\n")
	w("reaper's own count (the instrumented HTTP transport, `reaper_s3_http_requests_total` read from `--textfile`) next to the server's access log, for the same runs:\n\n")
	w("| run | reaper (client) | versitygw (server) |\n|---|---|---|\n")
	for _, scen := range r.scenarios("s3/") {
		rs := r.find(scen, "reaper")
		for i, x := range rs.Samples {
			w("| %s rep %d | %d: %s | %d: %s |\n", scen, i+1, sum(x.Client), fmtOps(x.Client), sum(x.Server), fmtOps(x.Server))
		}
	}
	for _, s := range r.Roots {
		x := s.Samples[0]
		w("| %s %s | %d: %s | %d: %s |\n", s.Scenario, s.Contender, sum(x.Client), fmtOps(x.Client), sum(x.Server), fmtOps(x.Server))
	}
	if r.StatusClient != nil {
		w("| status (in-process `lifecycle.List`) | %d: %s | — |\n", sum(r.StatusClient), fmtOps(r.StatusClient))
	}

	w("\n## Scan cost\n\n| scan | runs | median | min | max | requests (server) |\n|---|---|---|---|---|---|\n")
	if s := r.Status; s != nil {
		w("| `reaper status`, one root of %d tables (%d soft-deleted) | %d | %s | %s | %s | %d: %s |\n", s.Objects, c.StatusDeleted, len(s.Samples), fmtDur(s.median()), fmtDur(s.min()), fmtDur(s.max()), sum(s.requests()), fmtOps(s.requests()))
	}
	for _, s := range r.Roots {
		w("| `reaper purge --config` over %d discovered roots, %s | 1 | %s | | | %d: %s |\n", c.Roots, s.Contender, fmtDur(s.median()), sum(s.requests()), fmtOps(s.requests()))
	}

	w("%s", r.analysis())
	if m := r.memorySection(); m != "" {
		w("\n%s", m)
	}
	if len(r.Retention) > 0 {
		w("\n%s", r.retentionSection())
	}
	if len(r.RetentionRead) > 0 {
		w("\n%s", r.retentionReadSection())
	}
	if len(r.RetentionIdle) > 0 {
		w("\n%s", r.retentionIdleSection())
	}

	w("\n## Commands\n\n```\n")
	seen := map[string]bool{}
	all := slices.Clone(r.Series)
	if r.Status != nil {
		all = append(all, r.Status)
	}
	all = append(all, r.Roots...)
	for _, s := range all {
		if s.Command != "" && !seen[s.Scenario+s.Contender] {
			seen[s.Scenario+s.Contender] = true
			w("# %s, %s\n%s\n", s.Scenario, s.Contender, s.Command)
		}
	}
	w("```\n\nawscli: `AWS_CONFIG_FILE` holds `s3 = addressing_style = path`; credentials from the environment. rclone: remote `bench` from `RCLONE_CONFIG_BENCH_*` (type s3, provider Other, endpoint, force_path_style true). The roots pass reads a config with `discover: [{uri: s3://bench-roots/tenants/*/, storage_options: …}]`.\n\n")

	w("## How to reproduce\n\n```\nmake bench                      # full: %s\nmake bench BENCH_ARGS=--quick   # quick\ngo run ./bench --help           # sizes, repetitions, object size, peers\ngo run ./bench --render .bench/last-run.json   # rewrite this file from the last run's raw results\n```\n\n", "10k and 100k objects on S3 and local, 1M local files for the RSS check")
	w("`make bench` installs what is missing (awscli and rclone with apt-get when run as root, versitygw with scripts/install-versitygw.sh), builds ./bin/reaper with `make build`, starts versitygw on 127.0.0.1 with `--access-log`, and writes this file. Tables are created as files in versitygw's posix data directory (after CreateBucket through the API; a ListObjectsV2 checks the object count) with modification times before the drop; the soft-delete marker is written as a file too, dated with the drop (due-ness also counts the TTL from its LastModified).\n")
	return b.String()
}

// localTarget is issue 15's bound on a local purge: faster than rm -rf,
// which unlinks from one thread and fsyncs nothing.
const localTarget = 0.8

func concName(n int) string {
	if n == 0 {
		return "4, doubling toward limits.max_delete_concurrency = 16 while measured throughput rises and the store does not push back: the defaults"
	}
	return fmt.Sprint(n)
}

func (r *report) table(b *strings.Builder, scen string) {
	fmt.Fprintf(b, "### %s objects\n\n| contender | runs | median | min | max | objects/s | vs reaper | peak RSS | requests |\n|---|---|---|---|---|---|---|---|---|\n", strings.Replace(scen, "/", ", ", 1))
	rs := r.find(scen, "reaper")
	for _, s := range r.Series {
		if s.Scenario != scen {
			continue
		}
		ratio := s.median().Seconds() / rs.median().Seconds()
		req := "—"
		if s.Samples[0].Server != nil {
			req = fmt.Sprintf("%d: %s", sum(s.requests()), fmtOps(s.requests()))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %.0f | %.2fx | %s | %s |\n", s.Contender, len(s.Samples), fmtDur(s.median()), fmtDur(s.min()), fmtDur(s.max()), s.rate(), ratio, mib(s.maxRSS()), req)
	}
	b.WriteString("\n")
}

// summary is the short form printed at the end of a run.
func (r *report) summary() string {
	var b strings.Builder
	for _, t := range r.targets() {
		fmt.Fprintf(&b, "%-8s %s: %s (want %s)\n", strings.Trim(verdict(t.Pass), "*"), t.Name, t.Got, t.Want)
	}
	return b.String()
}
