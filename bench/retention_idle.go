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
)

// This file owns the idle-table scenarios (issue 36, item 5): a root of
// 1,000 or 10,000 small tables the LanceDB client wrote, none with a
// version to remove, on S3 (versitygw). Three ways to find that out are
// measured on one copy of the tables, requests counted from versitygw's
// access log:
//
//   - the client's cleanup loop, optimize({cleanupOlderThan}) table after
//     table (retention_bench.mjs cleanup), at a cutoff older than every
//     version;
//   - a one-shot `reaper retain --before` at the same cutoff: every table
//     read (its directories listed, its manifests read);
//   - `reaper run` with retention enabled on the root, pass after pass: the
//     first pass reads every table as the one-shot does and leaves a memo
//     of each (internal/worker/retain_memo.go); the passes after it are the
//     daemon's steady state, measured in two regimes (idleRegimes).
//
// Nothing is deleted by anyone (the keys are compared after every run), so
// every run reads the same copy.

// idleRegime is one retention policy the daemon runs with over the idle
// tables.
type idleRegime struct {
	Name string
	// Why says what the memo makes an idle table cost in this regime
	// (docs/RETENTION.md, "An idle table").
	Why string
	// retention is the root's retention section, for a fixture of
	// versions versions a table whose cutoff was cutoff.
	retention func(cutoff time.Time, versions int) string
}

var idleRegimes = []idleRegime{
	{
		Name: "young",
		Why:  "older_than longer than the tables' age: the cutoff is older than every version, as the one-shot's; no version can cross it before the next pass, so an idle table costs no request",
		retention: func(cutoff time.Time, _ int) string {
			// An hour past the cutoff's age: no version crosses it during
			// the run.
			return fmt.Sprintf("{enabled: true, older_than: %dh}", int(time.Since(cutoff).Hours())+1)
		},
	},
	{
		Name: "kept",
		Why:  "older_than 1s and keep_versions as many as each table has: every version is past the cutoff and kept by count (the cost of a table cleaned down to keep_versions); an idle table costs one listing of _versions/",
		retention: func(_ time.Time, versions int) string {
			return fmt.Sprintf("{enabled: true, older_than: 1s, keep_versions: %d}", versions)
		},
	},
}

// idleDaemon is one `reaper run` over the idle tables, in one regime.
type idleDaemon struct {
	Scenario string // "idle-s3/1000"
	Regime   string
	Tables   int
	Interval time.Duration // the schedule: @every Interval
	Config   string        // the configuration file, the secret redacted
	Command  string
	// Passes are the passes measured (daemonPass.Number): the first,
	// which reads every table, and the steady ones after it.
	Passes          []daemonPass
	MaxRSS, MaxAnon int64
}

// steady are the measured passes after the first.
func (d *idleDaemon) steady() []daemonPass {
	var out []daemonPass
	for _, p := range d.Passes {
		if p.Number > 1 {
			out = append(out, p)
		}
	}
	return out
}

// first is the first pass, when it was measured.
func (d *idleDaemon) first() *daemonPass {
	if len(d.Passes) > 0 && d.Passes[0].Number == 1 {
		return &d.Passes[0]
	}
	return nil
}

// idleKey names the cached fixture of n idle tables: bump the f1 when
// retention_bench.mjs build-idle builds them differently.
func idleKey(n int) string { return fmt.Sprintf("retention-idle-f1-%d", n) }

// retentionIdleScenarios runs the idle scenarios on S3 at each size of
// c.RetentionIdle (they run where --retention has s3).
func retentionIdleScenarios(ctx context.Context, c config, t tools, gw *gateway, rep *report, checkpoint func() error) error {
	if len(c.RetentionIdle) == 0 || !slices.Contains(c.Retention, "s3") {
		return nil
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.RetentionIdleLoad = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	lim, err := shippedLimits(c.Repo)
	if err != nil {
		return err
	}
	rep.IdleLimits = lim
	for _, n := range c.RetentionIdle {
		fx, err := cachedBuild(c, fmt.Sprintf("idle-s3/%d", n), idleKey(n), fmt.Sprintf("%d idle tables", n), func(dir string) (retentionFixture, error) {
			return buildWith(ctx, t, "build-idle", map[string]int{"tables": n}, dir)
		})
		if err != nil {
			return err
		}
		if len(fx.Tables) != n {
			return fmt.Errorf("idle fixture %s holds %d tables, want %d", idleKey(n), len(fx.Tables), n)
		}
		if err := idleS3(ctx, c, t, gw, fx, lim, rep, checkpoint); err != nil {
			return err
		}
	}
	return nil
}

// idleS3 measures the one-shot contenders, then the daemon in each regime,
// on one bucket holding a copy of fx.
func idleS3(ctx context.Context, c config, t tools, gw *gateway, fx retentionFixture, lim shipped, rep *report, checkpoint func() error) error {
	n := len(fx.Tables)
	scen := fmt.Sprintf("idle-s3/%d", n)
	bucket := fmt.Sprintf("bench-idle-%d", n)
	dir, err := gw.createBucket(ctx, bucket)
	if err != nil {
		return err
	}
	defer gw.deleteBucket(ctx, bucket)
	logf("%s: copying %d files into %s", scen, fx.Files, bucket)
	if out, err := exec.CommandContext(ctx, "cp", "-a", fx.Dir, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w: %s", fx.Dir, err, out)
	}
	syscall.Sync()
	keys, err := gw.keys(ctx, bucket, "db/")
	if err != nil {
		return err
	}
	if len(keys) != fx.Files {
		return fmt.Errorf("%s: ListObjectsV2 sees %d objects, want %d", bucket, len(keys), fx.Files)
	}
	unchanged := func(who string) error {
		left, err := gw.keys(ctx, bucket, "db/")
		if err != nil {
			return err
		}
		if d := diffKeys(keys, left); d != "" {
			return fmt.Errorf("%s: %s changed the idle tables: %s", scen, who, d)
		}
		return nil
	}
	uri := "s3://" + bucket + "/db"
	env := []string{"GOMEMLIMIT=" + lim.GoMemLimit}
	byName := map[string]*retSeries{}
	for _, name := range []string{contReaper, contLance} {
		byName[name] = &retSeries{Scenario: scen, Contender: name, Tables: n, Versions: fx.Tables[0].Versions, Files: fx.Files}
		rep.RetentionIdle = append(rep.RetentionIdle, byName[name])
	}
	for r := range c.RetentionReps {
		for _, name := range rotate([]string{contReaper, contLance}, r) {
			prom := filepath.Join(c.WorkDir, fmt.Sprintf("idle-%d-%d.prom", n, r))
			argv := idleArgv(t, name, uri, fx, gw, prom)
			off, cpu := gw.settledOffset(), gw.cpu()
			s, err := runIdle(ctx, name, argv, env, n, prom)
			if err != nil {
				return fmt.Errorf("%s %s: %w", scen, name, err)
			}
			s.ServerCPU = gw.cpu() - cpu
			if s.Server, err = gw.requestsSince(off, bucket); err != nil {
				return err
			}
			if _, s.ServerTime, err = gw.readLogTimes(off, bucket); err != nil {
				return err
			}
			if err := unchanged(name); err != nil {
				return err
			}
			s.FilesLeft = fx.Files
			byName[name].Samples = append(byName[name].Samples, s)
			byName[name].Command = redact(shellQuote(argv))
			logf("%s %-7s rep %d: %s (call %s), %d requests, %.1f MiB", scen, name, r+1, s.Wall.Round(time.Millisecond),
				s.Call.Round(time.Millisecond), sum(s.Server), float64(s.MaxRSS)/(1<<20))
		}
	}
	if err := checkpoint(); err != nil {
		return err
	}
	interval := c.RetentionIdleInterval
	if interval <= 0 {
		interval = idleInterval(byName[contReaper].wall())
	}
	for _, rg := range idleRegimes {
		d, err := idleDaemonRun(ctx, c, t, gw, bucket, fx, rg, interval, env)
		if err != nil {
			return fmt.Errorf("%s, reaper run (%s): %w", scen, rg.Name, err)
		}
		if err := unchanged("reaper run (" + rg.Name + ")"); err != nil {
			return err
		}
		rep.IdleDaemons = append(rep.IdleDaemons, d)
		if err := checkpoint(); err != nil {
			return err
		}
	}
	return nil
}

// idleInterval is the daemon's schedule for tables a one-shot reads in
// oneShot. Its first pass reads as much and overruns a tick or more; the
// passes after it send about a fourteenth of its requests, and start and
// end within a tick, leaving the quiet between two passes in which the
// harness reads their counts.
func idleInterval(oneShot time.Duration) time.Duration {
	return max(10*time.Second, (oneShot/3 + 5*time.Second).Round(time.Second))
}

// idleSpareReads bounds the passes a daemon run may leave unmeasured.
const idleSpareReads = 4

// idleArgv is contender name's command over every idle table at uri.
func idleArgv(t tools, name, uri string, fx retentionFixture, gw *gateway, prom string) []string {
	if name == contReaper {
		argv := append([]string{t.Reaper, "retain", "--root", uri}, storageFlags(gw)...)
		return append(argv, "--before", fx.cutoff().UTC().Format(time.RFC3339Nano), "--allow-short-ttl", "-o", "json", "--log-level", "warn", "--textfile", prom)
	}
	spec, _ := json.Marshal(map[string]any{"storage_options": gw.optionsMap(), "cutoff_ms": fx.CutoffMs, "table_count": len(fx.Tables)})
	return []string{t.Node, t.RetentionJS, "cleanup", uri, string(spec)}
}

// runIdle runs one contender and checks that it visited the n tables and
// found nothing to remove in any.
func runIdle(ctx context.Context, name string, argv, env []string, n int, prom string) (retSample, error) {
	res, err := measure(ctx, env, argv...)
	if err != nil {
		return retSample{}, err
	}
	s := retSample{Wall: res.Wall, MaxRSS: res.MaxRSS, CPU: res.CPU}
	if name == contReaper {
		if _, err := retainReport(res.Stdout, "nothing_to_do", n); err != nil {
			return s, err
		}
		s.Client, err = promRequests(prom)
		return s, err
	}
	call, tables, err := cleanupReport(res.Stdout)
	if err != nil {
		return s, err
	}
	for _, tb := range tables {
		if tb.Removed != 0 {
			return s, fmt.Errorf("the client's cleanup removed %d versions of %s, want none", tb.Removed, tb.Name)
		}
	}
	if len(tables) != n {
		return s, fmt.Errorf("the client's cleanup visited %d tables, want %d", len(tables), n)
	}
	s.Call = call
	return s, nil
}

// idleConfig is the daemon's configuration over the idle tables at
// bucket in regime rg.
func idleConfig(gw *gateway, bucket string, fx retentionFixture, rg idleRegime, interval time.Duration, addr string) string {
	var opts []string
	for _, kv := range gw.storageOptions() {
		k, v, _ := strings.Cut(kv, "=")
		opts = append(opts, fmt.Sprintf("%s: %q", k, v))
	}
	return fmt.Sprintf(`schedule: "@every %s"
listen: %q
log: {format: json, level: info}
safety: {allow_short_ttl: true}
roots:
  - uri: s3://%s/db
    storage_options: {%s}
    retention: %s
`, interval, addr, bucket, strings.Join(opts, ", "), rg.retention(fx.cutoff(), fx.Tables[0].Versions))
}

// idleDaemonRun runs `reaper run` over the idle tables in regime rg for
// its first pass and c.RetentionIdlePasses more, and stops it.
func idleDaemonRun(ctx context.Context, c config, t tools, gw *gateway, bucket string, fx retentionFixture, rg idleRegime, interval time.Duration, env []string) (*idleDaemon, error) {
	n := len(fx.Tables)
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(c.WorkDir, fmt.Sprintf("idle-%d-%s.yaml", n, rg.Name))
	text := idleConfig(gw, bucket, fx, rg, interval, addr)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return nil, err
	}
	out := &idleDaemon{Scenario: fmt.Sprintf("idle-s3/%d", n), Regime: rg.Name, Tables: n, Interval: interval, Config: redact(text),
		Command: strings.ReplaceAll(shellQuote([]string{t.Reaper, "run", "--config", cfg}), c.Repo+"/", "")}
	logf("%s: reaper run, %s, @every %s: its first pass and %d more", out.Scenario, rg.Name, interval, c.RetentionIdlePasses)
	off, cpu, own := gw.settledOffset(), gw.cpu(), time.Duration(0)
	d, err := startDaemon(t.Reaper, cfg, addr, strings.TrimSuffix(cfg, ".yaml")+".log", env)
	if err != nil {
		return nil, err
	}
	defer func() {
		if d != nil {
			_ = d.stop()
		}
	}()
	// A pass is measured when nothing else ran between the two reads
	// around it: the reads after the pass before it (or the start) and
	// after it. A pass that starts while the harness reads (a tick right
	// after a long first pass) spoils the reads on both its sides; the
	// next ones are measured instead, up to idleSpareReads of them.
	prev, clean := metricsText{}, true
	for k := 1; len(out.steady()) < c.RetentionIdlePasses; k++ {
		if k > 1+c.RetentionIdlePasses+idleSpareReads {
			return nil, fmt.Errorf("%d passes, %d measured: the passes keep starting while the harness reads; set --retention-idle-interval (now %s)", k-1, len(out.Passes), interval)
		}
		timeout := 2*interval + 10*time.Minute
		if k == 1 {
			timeout = 30 * time.Minute
		}
		m, err := d.waitPasses(ctx, k, timeout)
		if err != nil {
			return nil, err
		}
		next, nextCPU, nextOwn := gw.settledOffset(), gw.cpu(), procCPU(d.cmd.Process.Pid)
		again, err := d.scrape(ctx)
		if err != nil {
			return nil, err
		}
		was := clean
		clean = int(m.total("reaper_passes_total")+0.5) == k && again.total("reaper_passes_total") == m.total("reaper_passes_total") &&
			again.total("reaper_s3_http_requests_total") == m.total("reaper_s3_http_requests_total")
		if was && clean {
			p := passOf(prev, m)
			p.Number, p.ServerCPU, p.CPU = k, nextCPU-cpu, nextOwn-own
			if p.Server, p.ServerTime, err = gw.readLogTimes(off, bucket); err != nil {
				return nil, err
			}
			if p.Result != "success" || p.Retention["nothing_to_do"] != int64(n) {
				return nil, fmt.Errorf("pass %d: result %q, retention %v: want success and %d tables nothing_to_do: %s", k, p.Result, p.Retention, n, d.logTail())
			}
			out.Passes = append(out.Passes, p)
			logf("%s reaper run (%s) pass %d: %s, %d requests (client %d)", out.Scenario, rg.Name, k, p.Duration.Round(time.Millisecond), sum(p.Server), sum(p.Client))
		} else {
			logf("%s reaper run (%s) pass %d: not measured (a pass ran while the harness read its counts)", out.Scenario, rg.Name, k)
		}
		if clean {
			prev, off, cpu, own = m, next, nextCPU, nextOwn
		} else {
			// The next read waits for the pass that spoiled this one.
			k = int(again.total("reaper_passes_total") + 0.5)
		}
	}
	stopped := d
	d = nil
	if err := stopped.stop(); err != nil {
		return nil, fmt.Errorf("reaper run stopped with %v: %s", err, stopped.logTail())
	}
	out.MaxRSS, out.MaxAnon = stopped.hwm, stopped.anon
	return out, nil
}
