package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runResult is one measured subprocess run.
type runResult struct {
	Wall   time.Duration
	MaxRSS int64 // bytes, from the child's rusage (VmHWM)
	// MaxAnon is the peak of RssAnon (bytes): the process's own memory,
	// without the pages of its executable the kernel mapped in (RssFile),
	// which a large static binary makes tens of MiB of VmHWM.
	MaxAnon int64
	// CPU is the child's user and system time (its rusage).
	CPU    time.Duration
	Stdout []byte
	Stderr []byte
}

// measure runs argv with env added to the environment and returns its wall
// time and peak resident set size. A non-zero exit is an error that carries
// the tail of stderr.
func measure(ctx context.Context, env []string, argv ...string) (runResult, error) {
	var out bytes.Buffer
	res, err := measureTo(ctx, env, &out, argv...)
	res.Stdout = out.Bytes()
	return res, err
}

// measureTo is measure with the child's stdout written to stdout instead
// of kept (runResult.Stdout is nil).
func measureTo(ctx context.Context, env []string, stdout io.Writer, argv ...string) (runResult, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(cleanEnv(), env...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errb
	start := time.Now()
	err := cmd.Start()
	var hwm, anon int64
	if err == nil {
		done := make(chan struct{})
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			hwm, anon = pollHWM(cmd.Process.Pid, done)
		}()
		err = cmd.Wait()
		close(done)
		<-polled
	}
	res := runResult{Wall: time.Since(start), Stderr: errb.Bytes(), MaxRSS: hwm, MaxAnon: anon}
	if cmd.ProcessState != nil {
		res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if cmd.ProcessState != nil && hwm == 0 {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss * 1024 // Linux reports KiB
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, tail(errb.String(), 800))
	}
	return res, nil
}

// procCPU is a running process's user and system time so far, from
// /proc/<pid>/stat (0 when it cannot be read).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'. utime and stime are fields 14 and 15, in clock ticks
	// (USER_HZ, 100 on Linux).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// asExit reports whether err carries a child's exit status.
func asExit(err error, ee **exec.ExitError) bool { return errors.As(err, ee) }

// pollHWM samples /proc/<pid>/status VmHWM (the peak RSS of the process's
// own memory since exec) every 5 ms until done. The child's rusage Maxrss is
// not used: Linux folds the parent's RSS at fork/vfork time into it, so a
// tiny rm -rf would report the harness's own size.
func pollHWM(pid int, done <-chan struct{}) (peak, anon int64) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					peak = max(peak, kib(v))
				}
				if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
					anon = max(anon, kib(v))
				}
			}
		}
		select {
		case <-done:
			return peak, anon
		case <-t.C:
		}
	}
}

// cleanEnv is the inherited environment without AWS_* and RCLONE_*
// settings (a CA bundle or profile meant for real AWS would steer the
// contenders), and with loopback exempt from any proxy.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "RCLONE_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// promRequests reads reaper_s3_http_requests_total from a textfile written
// by `reaper purge --textfile`: requests by operation, all codes summed.
func promRequests(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make(map[string]int64)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "reaper_s3_http_requests_total{") {
			continue
		}
		labels, val, ok := strings.Cut(strings.TrimPrefix(line, "reaper_s3_http_requests_total{"), "} ")
		if !ok {
			continue
		}
		op := labelValue(labels, "operation")
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", line, err)
		}
		if v > 0 {
			out[op] += int64(v)
		}
	}
	return out, sc.Err()
}

// labelValue returns the value of label name in a Prometheus label list.
func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// kib parses a /proc status value such as "  1234 kB" into bytes.
func kib(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return n * 1024
}

// finalConcurrency reads where the adaptive delete concurrency ended from
// reaper's JSON log: the "purge finished" line's delete_concurrency.
func finalConcurrency(stderr []byte) (int, error) {
	for _, line := range bytes.Split(stderr, []byte("\n")) {
		var rec struct {
			Msg  string `json:"msg"`
			Conc int    `json:"delete_concurrency"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "purge finished" {
			return rec.Conc, nil
		}
	}
	return 0, fmt.Errorf("no \"purge finished\" line with delete_concurrency in reaper's log: %s", tail(string(stderr), 400))
}
