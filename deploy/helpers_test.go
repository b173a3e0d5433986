package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// repoDir is the reaper repository (the parent of deploy/); go test runs in
// the package directory.
func repoDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "go.mod"), "deploy/ must sit in the reaper repository")
	return dir
}

// reaperBin is ./bin/reaper, built by `make build` (make deploy-check runs
// it first, with the command make image builds the image's binaries with).
func reaperBin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(repoDir(t), "bin", "reaper")
	_, err := os.Stat(bin)
	require.NoError(t, err, "%s is missing: run `make build` (make deploy-check does)", bin)
	return bin
}

// debianTool is one of the Debian tools scripts/install-promtools.sh
// (make tools) unpacks into .tools/bin as name; the variable env overrides
// the path.
func debianTool(t testing.TB, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join(repoDir(t), ".tools", "bin", name)
	}
	_, err := os.Stat(p)
	require.NoError(t, err, "%s is missing: run `make tools` (scripts/install-promtools.sh)", name)
	return p
}

// result is one finished reaper command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit status %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// baseEnv is the environment every reaper process starts from: nothing of
// the test's own (no REAPER_*, no AWS_*), a HOME of its own.
func baseEnv(t testing.TB) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TZ=UTC"}
}

// runReaper runs the reaper binary to completion with env added to baseEnv.
func runReaper(t testing.TB, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, reaperBin(t), args...)
	cmd.Env = append(baseEnv(t), env...)
	return runCmd(t, cmd)
}

// runCmd runs cmd to completion, capturing its output; only a failure to
// start or wait fails the test, not an exit status.
func runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		require.NoError(t, err, "run %s", strings.Join(cmd.Args, " "))
	}
	return r
}

// freeAddr is a loopback address with a port nobody listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t testing.TB, url string, within time.Duration, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			require.FailNow(t, "the process exited while waiting for "+url)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(body.String()))
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.FailNow(t, fmt.Sprintf("%s did not answer 200 within %s; last answer: %s", url, within, last))
}

// writeTable writes a small table in Lance's layout under dir/<name>.lance:
// a manifest, a data file and a transaction, modified at mtime.
func writeTable(t testing.TB, dir, name string, mtime time.Time) {
	t.Helper()
	files := map[string]int{
		"_versions/1.manifest":    200,
		"data/0-a1b2c3.lance":     4096,
		"_transactions/0-1.txn":   64,
		"_indices/0/index.idx":    512,
		"_deletions/0-1-0.arrow":  32,
		"_versions/2.manifest":    220,
		"data/1-d4e5f6.lance":     2048,
		"_transactions/1-2.txn":   64,
		"_latest.manifest":        220,
		"_versions/3.manifest":    230,
		"data/2-0a0b0c.lance":     1024,
		"_transactions/2-3.txn":   64,
		"_indices/1/part-0.index": 128,
	}
	for rel, size := range files {
		p := filepath.Join(dir, name+".lance", filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{'x'}, size), 0o644))
		require.NoError(t, os.Chtimes(p, mtime, mtime))
	}
}

// writeDueTable writes a table the way Lance's drop_table leaves it: the
// data, then the marker <name>.deleted dated now by this host's clock with a
// one-millisecond TTL. reaper judges due-ness by the store's clock against
// both deleted_at_ms + ttl_ms and the marker's LastModified + ttl_ms (on a
// local disk the later of mtime and ctime, which os.Chtimes cannot set back),
// so no marker can be back-dated into being due: the table becomes due once
// the store's clock has passed the marker (waitDue waits for that), and a
// pass purges it only with safety.allow_short_ttl, its TTL being below
// safety.min_ttl. Its files are written before the marker, so they predate
// the drop, as the identity fence requires.
func writeDueTable(t testing.TB, dir, name string) {
	t.Helper()
	writeTable(t, dir, name, time.Now())
	marker := fmt.Sprintf(`{"deleted_at_ms":%d,"ttl_ms":1}`, time.Now().UnixMilli())
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".deleted"), []byte(marker), 0o644))
}

// waitDue polls `reaper status -o json` until every named table of root is
// due by the store's clock, which reaper reads (a local disk: the kernel's
// clock; S3: the Date header, a lower bound that may trail this host's clock
// by a couple of seconds). flags are extra status flags (storage options).
func waitDue(t testing.TB, root string, flags []string, names ...string) {
	t.Helper()
	args := append(append([]string{"status", "--root", root, "-o", "json"}, flags...), names...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runReaper(t, nil, args...)
		require.Equal(t, 0, r.code, "reaper status: %s", r)
		var st []struct {
			Name         string `json:"name"`
			State        string `json:"state"`
			Due          bool   `json:"due"`
			PurgeAfterMs int64  `json:"purge_after_ms"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), "reaper status -o json: %s", r)
		require.Len(t, st, len(names), "reaper status: %s", r)
		var notDue []string
		for _, e := range st {
			require.Equal(t, "soft_deleted", e.State, "%s/%s: %s", root, e.Name, r)
			// Two processes' readings of an S3 store's clock may differ by
			// up to a second (Date headers of second precision, cached by
			// versitygw for up to a second), so this status saying due does
			// not make the next process's pass agree. versitygw runs on this
			// host: its clock is ours, and a margin settles it.
			settled := !strings.HasPrefix(root, "s3://") || time.Now().After(time.UnixMilli(e.PurgeAfterMs).Add(2*time.Second))
			if !e.Due || !settled {
				notDue = append(notDue, e.Name)
			}
		}
		if len(notDue) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s: %v not due within 10s by the store's clock: %s", root, notDue, r)
		time.Sleep(20 * time.Millisecond) // polling the store's clock past the TTL, not synchronizing
	}
}

// tableExists reports whether dir/<name>.lance still holds data.
func tableExists(t testing.TB, dir, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, name+".lance"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}
