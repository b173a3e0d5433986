package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file runs `reaper run` (the daemon) under the benchmark: it starts
// the process on a configuration the caller wrote, reads its /metrics
// while it runs, and cuts its passes apart there: a pass ends when
// reaper_passes_total grows, and its duration, its own request count and
// its tables' results are the differences of the pass's series between
// two such ends. Between passes the daemon sends nothing, so the server's
// access log is cut at the same points (daemonPasses).

// daemonPass is one pass of a measured daemon.
type daemonPass struct {
	Number   int           // the daemon's first pass is 1
	Duration time.Duration // reaper_pass_duration_seconds_sum's growth
	Result   string        // the reaper_passes_total result that grew
	// Server: versitygw's access log between this pass's end and the
	// last's (the daemon's start for the first); Client:
	// reaper_s3_http_requests_total's growth, by operation.
	Server, Client map[string]int64
	// ServerTime is versitygw's own time on the pass's requests, by
	// operation, in milliseconds.
	ServerTime map[string]int64 `json:",omitempty"`
	// Retention is reaper_retention_tables_total's growth, by result.
	Retention map[string]int64
	// CPU is the daemon's user and system time in the pass, ServerCPU
	// versitygw's (both between the same two reads).
	CPU, ServerCPU time.Duration
}

// metricsText is one scrape of /metrics: each series' value by its
// name and labels as written ("name{a=\"b\"}").
type metricsText map[string]float64

// parseMetrics reads the Prometheus text format (comments skipped).
func parseMetrics(r io.Reader) (metricsText, error) {
	out := metricsText{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// total sums every series of metric name.
func (m metricsText) total(name string) float64 {
	var n float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			n += v
		}
	}
	return n
}

// by sums metric name's series by the value of label.
func (m metricsText) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		labels, ok := strings.CutPrefix(k, name+"{")
		if !ok {
			continue
		}
		out[labelValue(strings.TrimSuffix(labels, "}"), label)] += v
	}
	return out
}

// grown is what each label value of metric name by label grew by from
// before to m (values that did not grow left out).
func (m metricsText) grown(before metricsText, name, label string) map[string]int64 {
	was := before.by(name, label)
	out := map[string]int64{}
	for k, v := range m.by(name, label) {
		if d := int64(v - was[k] + 0.5); d > 0 {
			out[k] = d
		}
	}
	return out
}

// passOf is the pass that ended between two scrapes.
func passOf(before, after metricsText) daemonPass {
	p := daemonPass{
		Duration:  time.Duration((after.total("reaper_pass_duration_seconds_sum") - before.total("reaper_pass_duration_seconds_sum")) * float64(time.Second)),
		Client:    after.grown(before, "reaper_s3_http_requests_total", "operation"),
		Retention: after.grown(before, "reaper_retention_tables_total", "result"),
	}
	for r := range after.grown(before, "reaper_passes_total", "result") {
		p.Result = r
	}
	return p
}

// daemon is a running `reaper run`.
type daemon struct {
	cmd     *exec.Cmd
	metrics string // its /metrics URL
	log     string // its log file
	exited  chan error
	polled  chan struct{}
	hwm     int64 // peak RSS, set once polled is closed
	anon    int64
}

// startDaemon starts `reaper run --config cfg` listening on addr (the
// configuration's listen), with env added, its log written to logPath.
func startDaemon(reaper, cfg, addr, logPath string, env []string) (*daemon, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	d := &daemon{metrics: "http://" + addr + "/metrics", log: logPath, exited: make(chan error, 1), polled: make(chan struct{})}
	d.cmd = exec.Command(reaper, "run", "--config", cfg)
	d.cmd.Env = append(cleanEnv(), env...)
	d.cmd.Stdout, d.cmd.Stderr = lf, lf
	if err := d.cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start reaper run: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(d.polled)
		d.hwm, d.anon = pollHWM(d.cmd.Process.Pid, done)
	}()
	go func() {
		err := d.cmd.Wait()
		close(done)
		lf.Close()
		d.exited <- err
	}()
	return d, nil
}

// scrape reads the daemon's /metrics.
func (d *daemon) scrape(ctx context.Context) (metricsText, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", d.metrics, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// errDaemonExited: the daemon stopped by itself.
var errDaemonExited = errors.New("reaper run exited")

// waitPasses waits, up to timeout, until the daemon has finished n passes
// in all, and returns the scrape of /metrics that follows. It watches the
// log for the worker's "pass finished" line (written once the pass's
// metrics are), not /metrics: a scrape costs the daemon CPU that would
// count as a pass's.
func (d *daemon) waitPasses(ctx context.Context, n int, timeout time.Duration) (metricsText, error) {
	deadline := time.Now().Add(timeout)
	for d.passesLogged() < n {
		select {
		case err := <-d.exited:
			d.exited <- err
			return nil, fmt.Errorf("%w (%v): %s", errDaemonExited, err, d.logTail())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reaper run: pass %d not finished after %s: %s", n, timeout, d.logTail())
		}
	}
	return d.scrape(ctx)
}

// passesLogged counts the "pass finished" lines of the daemon's JSON log.
func (d *daemon) passesLogged() int {
	b, _ := os.ReadFile(d.log)
	return bytes.Count(b, []byte(`"msg":"pass finished"`))
}

// stop sends SIGTERM and waits for the daemon (SIGKILL after 30 s).
func (d *daemon) stop() error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		err = <-d.exited
	}
	<-d.polled
	return err
}

func (d *daemon) logTail() string {
	b, _ := os.ReadFile(d.log)
	return tail(string(b), 800)
}
