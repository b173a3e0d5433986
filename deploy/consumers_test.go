package deploy

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pushgatewayBin is Debian's Pushgateway (see debianTool).
func pushgatewayBin(t testing.TB) string { return debianTool(t, "REAPER_PUSHGATEWAY", "pushgateway") }

// nodeExporterBin is Debian's node_exporter (see debianTool).
func nodeExporterBin(t testing.TB) string {
	return debianTool(t, "REAPER_NODE_EXPORTER", "node_exporter")
}

// realPushgateway starts a Pushgateway on a loopback port; its log is
// returned by the func.
func realPushgateway(t *testing.T) (url string, logs func() string) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, pushgatewayBin(t), "--web.listen-address="+addr)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	url = "http://" + addr
	waitHTTP(t, url+"/-/ready", 10*time.Second, exited)
	return url, out.String
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	return string(b)
}

// checkMetrics runs `promtool check metrics` on an exposition.
func checkMetrics(t *testing.T, what, exposition string) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics on %s:\n%s", what, out)
}

// TestExportsPassRealConsumers: a one-shot pass pushes to a real
// Pushgateway and writes a textfile, and a daemon serves /metrics; promtool
// finds nothing wrong in any of them, the Pushgateway logs no complaint
// about the push (it did ~850 times a minute while pushes carried go_* and
// process_* families), and the pushed group carries the origin's namespace.
func TestExportsPassRealConsumers(t *testing.T) {
	pg, pgLogs := realPushgateway(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	writeTable(t, db, "live", time.Now().Add(-time.Hour))
	writeDueTable(t, db, "dropped")
	waitDue(t, db, nil, "dropped")
	prom := filepath.Join(dir, "reaper.prom")

	r := runReaper(t, []string{"POD_NAMESPACE=lance"}, "purge", "--root", db, "--allow-short-ttl",
		"--pushgateway", pg, "--textfile", prom, "--shard", "0/1")
	require.Equal(t, 0, r.code, "purge: %s", r)

	text, err := os.ReadFile(prom)
	require.NoError(t, err)
	checkMetrics(t, "the textfile", string(text))
	require.NotContains(t, string(text), "go_goroutines")
	require.Contains(t, string(text), "reaper_build_info{")

	scraped := httpGet(t, pg+"/metrics")
	checkMetrics(t, "the Pushgateway's /metrics", scraped)
	for _, want := range []string{
		`reaper_tables_purged_total{instance="",job="reaper",namespace="lance"} 1`,
		`push_time_seconds{instance="",job="reaper",namespace="lance"}`,
		`push_failure_time_seconds{instance="",job="reaper",namespace="lance"} 0`,
	} {
		require.True(t, strings.Contains(scraped, want), "the Pushgateway has no %s", want)
	}
	require.False(t, strings.Contains(scraped, `go_goroutines{instance="",job="reaper"`), "go_* families were pushed")
	logs := pgLogs()
	require.NotContains(t, logs, "This is bad")
	require.NotContains(t, logs, "level=error")

	// The daemon's scrape, as Prometheus reads it.
	body, _ := daemonFirstScrape(t, "--root", db)
	checkMetrics(t, "the daemon's /metrics", body)
}

// daemonFirstScrape runs `reaper run` with args and a free listen address
// until its first pass succeeded, and returns its /metrics then and its
// logs.
func daemonFirstScrape(t *testing.T, args ...string) (body, logs string) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, reaperBin(t), append(append([]string{"run"}, args...), "--set", "listen="+addr)...)
	cmd.Env = baseEnv(t)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	waitHTTP(t, "http://"+addr+"/metrics", 10*time.Second, exited)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if body = httpGet(t, "http://"+addr+"/metrics"); strings.Contains(body, `reaper_passes_total{result="success"} 1`) {
			break
		}
	}
	require.Contains(t, body, `reaper_passes_total{result="success"} 1`, "daemon logs:\n%s", stderr.String())
	return body, stderr.String()
}

// TestTextfileReadByNodeExporter: node_exporter's textfile collector, the
// consumer `--textfile` is for, reads the file a one-shot pass wrote without
// an error (it reported 32 errors per scrape while the file carried go_* and
// process_* families that collide with its own) and serves reaper's series
// with the values the pass wrote.
func TestTextfileReadByNodeExporter(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	writeTable(t, db, "live", time.Now().Add(-time.Hour))
	writeDueTable(t, db, "dropped")
	waitDue(t, db, nil, "dropped")
	textDir := filepath.Join(dir, "textfile")
	require.NoError(t, os.Mkdir(textDir, 0o755))

	r := runReaper(t, nil, "purge", "--root", db, "--allow-short-ttl",
		"--textfile", filepath.Join(textDir, "reaper.prom"))
	require.Equal(t, 0, r.code, "purge: %s", r)

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, nodeExporterBin(t), "--web.listen-address="+addr,
		"--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+textDir)
	// A file, not a pipe: node_exporter logs a gathering error before it
	// answers the scrape, so the line is in the file when httpGet returns.
	logFile, err := os.Create(filepath.Join(dir, "node_exporter.log"))
	require.NoError(t, err)
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	waitHTTP(t, "http://"+addr+"/metrics", 10*time.Second, exited)

	scraped := httpGet(t, "http://"+addr+"/metrics")
	logs, err := os.ReadFile(logFile.Name())
	require.NoError(t, err)
	// A family that collides with node_exporter's own (go_*, process_*)
	// is logged as "level=error msg=\"error gathering metrics: ...\"".
	require.NotContains(t, string(logs), "level=error")
	require.Contains(t, scraped, "\nnode_textfile_scrape_error 0\n", "node_exporter log:\n%s", logs)
	require.Contains(t, scraped, "\nreaper_tables_purged_total 1\n")
	require.Contains(t, scraped, `reaper_passes_total{result="success"} 1`)
	require.Regexp(t, `reaper_tables\{root="file://[^"]+/db",state="live"\} 1`, scraped)
	require.Regexp(t, `reaper_build_info\{go_version="go[^"]+",version="[^"]+"\} 1`, scraped)
	require.Regexp(t, `node_textfile_mtime_seconds\{file="[^"]*reaper.prom"\} \d`, scraped)
	checkMetrics(t, "node_exporter's /metrics", scraped)
}
