package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/clocktest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// gauge reads one series from the runtime's registry.
func metricValue(t *testing.T, rt *runtime, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := rt.registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// The metrics after one real pass say what the pass did.
func TestMetricsAfterAPass(t *testing.T) {
	f := newPurgeFixture(t)
	o := f.b.opts
	o.setClock(f.b.clock, f.now)
	rt, err := newRuntime(context.Background(), o, passFlags{})
	require.NoError(t, err)
	defer rt.close()
	_, err = rt.worker.Pass(context.Background(), nil)
	require.NoError(t, err)

	root := "file://" + f.b.opts.Root
	objs := f.sizes["due"][0] + f.sizes["older.v2"][0]
	bytes := f.sizes["due"][1] + f.sizes["older.v2"][1]
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"reaper_passes_total", map[string]string{"result": "partial"}, 1},
		{"reaper_passes_total", map[string]string{"result": "success"}, 0},
		{"reaper_pass_duration_seconds", nil, 1},
		{"reaper_tables_purged_total", nil, 3},
		{"reaper_objects_deleted_total", nil, float64(objs)},
		{"reaper_bytes_reclaimed_total", nil, float64(bytes)},
		{"reaper_purge_conflicts_total", nil, 1},
		{"reaper_purge_failures_total", map[string]string{"reason": "invalid_marker"}, 2},
		{"reaper_skipped_total", map[string]string{"reason": "not_due"}, 1},
		{"reaper_tables", map[string]string{"root": root, "state": "live"}, 1},
		// As the pass left the root: of the four due tables three were
		// purged (the orphan marker among them); the conflict stays due.
		{"reaper_tables", map[string]string{"root": root, "state": "due"}, 1},
		{"reaper_tables", map[string]string{"root": root, "state": "invalid_marker"}, 2},
		{"reaper_tables", map[string]string{"root": root, "state": "orphan_marker"}, 0},
		// Three purges and the conflict, which is found under the lease.
		{"reaper_lock_acquisitions_total", map[string]string{"result": "acquired"}, 4},
		{"reaper_lock_acquisitions_total", map[string]string{"result": "contended"}, 0},
		{"reaper_lock_acquisitions_total", map[string]string{"result": "error"}, 0},
	} {
		require.Equal(t, tc.want, metricValue(t, rt, tc.name, tc.labels), "%s%v", tc.name, tc.labels)
	}
	require.Positive(t, metricValue(t, rt, "reaper_objstore_requests_total", map[string]string{"op": "delete_batch", "code": "ok"}))
	problems, err := testutil.GatherAndLint(rt.registry)
	require.NoError(t, err)
	for _, p := range problems {
		require.True(t, strings.HasPrefix(p.Metric, "go_") || strings.HasPrefix(p.Metric, "process_"), "lint: %s: %s", p.Metric, p.Text)
	}
}

// The daemon serves its endpoints, runs a pass at start and on schedule,
// and exits 0 on the first signal.
func TestDaemonRunsScheduledPassesAndShutsDown(t *testing.T) {
	f := newPurgeFixture(t)
	o := runOptions{storeOptions: f.b.opts}
	o.setClock(f.b.clock, f.now)
	o.Sets = []string{"listen=127.0.0.1:0", "schedule=@every 10m", "shutdown_grace=5s"}
	clock := clocktest.NewFake(time.Now())
	o.clock = clock
	ready := make(chan string, 1)
	o.ready = ready
	drain := make(chan struct{})
	ctx := withDrain(context.Background(), drain)
	done := make(chan error, 1)
	go func() { done <- runDaemon(ctx, o, io.Discard) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("daemon exited early: %v", err)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)

	// The first pass runs at start; then the scheduler waits on its timer.
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, clock.WaitForTimers(waitCtx, 1))
	require.Eventually(t, func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, `reaper_passes_total{result="partial"} 1`)
	}, 30*time.Second, 20*time.Millisecond)
	require.Empty(t, f.b.tableKeys(t, "due"))

	clock.Advance(10 * time.Minute)
	require.Eventually(t, func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, `reaper_passes_total{result="partial"} 2`)
	}, 30*time.Second, 20*time.Millisecond)

	close(drain)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop after the first signal")
	}
}

// A bad config is a usage error naming the key.
func TestDaemonConfigErrors(t *testing.T) {
	o := runOptions{storeOptions: localBackend(t).opts}
	o.Sets = []string{"schedule=every tuesday"}
	err := runDaemon(context.Background(), o, io.Discard)
	require.Equal(t, exitUsage, exitCode(err))
	require.ErrorContains(t, err, "schedule")
}

// A pass writes one ledger row per decision, and reaper audit reads them.
func TestPurgeWritesTheAuditLedger(t *testing.T) {
	f := newPurgeFixture(t)
	ledgerDir := t.TempDir() + "/ledger"
	o := f.opts(false)
	o.Sets = []string{"audit.location=" + ledgerDir}
	var out strings.Builder
	_ = runPurge(context.Background(), o, &out)

	out.Reset()
	ao := auditOptions{globalOptions: quiet(), Location: ledgerDir, Output: "json", Since: 1000 * 24 * time.Hour}
	ao.setClock(f.b.clock, f.now.Add(time.Minute))
	require.NoError(t, runAudit(context.Background(), ao, &out))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &rows), out.String())
	got := map[string]string{}
	for _, r := range rows {
		got[r["table"].(string)] = r["action"].(string)
		require.Equal(t, "file://"+f.b.opts.Root, r["root"])
	}
	require.Equal(t, map[string]string{
		"due": "purged", "older.v2": "purged", "orphan": "purged", "notdue": "skipped",
		"conflict": "conflict", "garbage": "failed", "negative": "failed",
	}, got)
}

// --shard I/N splits roots between replicas: each root is purged by
// exactly one shard.
func TestShardFlagSplitsRoots(t *testing.T) {
	var roots []string
	for i := range 6 {
		b := localBackend(t)
		b.writeTable(t, "t", time.Now().Add(-30*day))
		b.writeMarker(t, "t", lifecycle.EncodeMarker(time.Now(), 7*day), time.Now())
		roots = append(roots, fmt.Sprintf("roots=%s", b.opts.Root))
		_ = i
	}
	clock := objstoretest.NewClock() // the shards run 8 days after the drops
	all := []string{}
	for _, r := range roots {
		all = append(all, strings.TrimPrefix(r, "roots="))
	}
	seen := map[string]int{}
	for i := range 3 {
		var out strings.Builder
		o := purgeOptions{storeOptions: storeOptions{globalOptions: quiet()}, Output: "json"}
		o.setClock(clock, time.Now().Add(8*day))
		o.Sets = []string{"roots=" + strings.Join(all, ",")}
		o.Shard = fmt.Sprintf("%d/3", i)
		require.NoError(t, runPurge(context.Background(), o, &out))
		rep, _ := decodeReport(t, []byte(out.String()))
		for _, p := range rep.Purged {
			seen[p.Root]++
		}
	}
	require.Len(t, seen, 6, "every root purged: %v", seen)
	for r, n := range seen {
		require.Equal(t, 1, n, r)
	}
	var out strings.Builder
	o := purgeOptions{storeOptions: storeOptions{globalOptions: quiet(), Root: all[0]}, Output: "json"}
	o.Shard = "3/3"
	require.Equal(t, exitUsage, exitCode(runPurge(context.Background(), o, &out)))
}

// A one-shot pass can leave its metrics for the node-exporter textfile
// collector, and push them to a Pushgateway: reaper's own families only
// (no go_* or process_*), grouped by the pod's namespace.
func TestPurgeExportsMetrics(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "lance")
	f := newPurgeFixture(t)
	var pushed strings.Builder
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		pushed.WriteString(r.Method + " " + r.URL.Path + "\n" + string(b))
	}))
	defer gw.Close()
	o := f.opts(false)
	o.Textfile = t.TempDir() + "/reaper.prom"
	o.Pushgateway = gw.URL
	var out strings.Builder
	_ = runPurge(context.Background(), o, &out)
	b, err := os.ReadFile(o.Textfile)
	require.NoError(t, err)
	require.Contains(t, string(b), `reaper_passes_total{result="partial"} 1`)
	require.Contains(t, string(b), "reaper_tables_purged_total 3")
	require.Contains(t, pushed.String(), "PUT /metrics/job/reaper/namespace/lance\n")
	require.Contains(t, pushed.String(), "reaper_objects_deleted_total")
	require.Contains(t, string(b), "reaper_build_info{")
	for _, foreign := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		require.NotContains(t, string(b), foreign)
		require.NotContains(t, pushed.String(), foreign)
	}
}

// The full store stack (retries, metrics, tracing) over a table whose data/
// is larger than the local backend sorts in memory: every object is purged.
func TestPurgeHugeLocalDirectoryThroughTheStack(t *testing.T) {
	b := localBackend(t)
	old := time.Now().Add(-30 * day)
	dataDir := filepath.Join(b.opts.Root, "big.lance", "data")
	require.NoError(t, os.MkdirAll(dataDir, 0o755))
	const n = 12000
	for i := range n {
		p := filepath.Join(dataDir, fmt.Sprintf("%08x.lance", uint32(i)*2654435761))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	b.put(t, "big.lance/_versions/1.manifest", []byte("m"), old)
	b.writeMarker(t, "big", lifecycle.EncodeMarker(time.Now(), 7*day), time.Now())
	var out strings.Builder
	o := purgeOptions{storeOptions: b.opts, Output: "json"}
	o.setClock(b.clock, time.Now().Add(8*day))
	require.NoError(t, runPurge(context.Background(), o, &out), out.String())
	rep, _ := decodeReport(t, []byte(out.String()))
	require.Equal(t, []purgedJSON{{Name: "big", Objects: n + 1, Bytes: n + 1}}, rep.Purged)
	require.Empty(t, b.keys(t))
}

// TestShippedConfig: config/reaper.yaml, unchanged, runs a daemon against
// a root given by --root (the README's `--root ./var/demo/db`): ready, and
// its first pass a success, not partial; without a root it says in one
// line what to set (exit 2).
func TestShippedConfig(t *testing.T) {
	shipped, err := filepath.Abs(filepath.Join("..", "..", "config", "reaper.yaml"))
	require.NoError(t, err)

	err = runDaemon(context.Background(), runOptions{storeOptions: storeOptions{globalOptions: quiet()}, passFlags: passFlags{ConfigPath: shipped}}, io.Discard)
	require.Equal(t, exitUsage, exitCode(err))
	require.EqualError(t, err, "config: roots = []: no root and no discover pattern; pass --root /path/to/lancedb (e.g. --root ./var/demo/db after 'make run'), set REAPER_ROOTS, or list roots or discover patterns in the file")

	b := localBackend(t)
	b.writeTable(t, "live", time.Now().Add(-time.Hour))
	d, err := startDaemon(t, runOptions{storeOptions: b.opts, passFlags: passFlags{ConfigPath: shipped}})
	require.NoError(t, err, "daemon exited early")
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, d.clock.WaitForTimers(waitCtx, 1))
	d.waitMetric(t, `reaper_passes_total{result="success"} 1`, "the first pass is a success")
	code, body := d.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, d.stop(t))
}

// testDaemon is runDaemon started in the background on a fake scheduler
// clock, its HTTP server on a free port.
type testDaemon struct {
	addr  string
	clock *clocktest.Fake
	drain chan struct{}
	done  chan error
}

// startDaemon starts o (its listen address is set to a free port) and
// waits until it serves; nil with the error when it exited first.
func startDaemon(t *testing.T, o runOptions) (*testDaemon, error) {
	t.Helper()
	o.Sets = append(o.Sets, "listen=127.0.0.1:0")
	d := &testDaemon{clock: clocktest.NewFake(time.Now()), drain: make(chan struct{}), done: make(chan error, 1)}
	o.clock = d.clock
	ready := make(chan string, 1)
	o.ready = ready
	go func() { d.done <- runDaemon(withDrain(context.Background(), d.drain), o, io.Discard) }()
	select {
	case d.addr = <-ready:
		return d, nil
	case err := <-d.done:
		return nil, err
	}
}

// get fetches a path of the daemon's HTTP server.
func (d *testDaemon) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitMetric waits until /metrics holds want.
func (d *testDaemon) waitMetric(t *testing.T, want, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, body := d.get(t, "/metrics")
		return strings.Contains(body, want)
	}, 30*time.Second, 20*time.Millisecond, why)
}

// stop sends the first signal and returns how the daemon ended.
func (d *testDaemon) stop(t *testing.T) error {
	t.Helper()
	close(d.drain)
	select {
	case err := <-d.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop after the first signal")
		return nil
	}
}
