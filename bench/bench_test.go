package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/stretchr/testify/require"
)

func TestLayoutCoversEveryLanceDirectory(t *testing.T) {
	for _, n := range []int{1, 10, 100, 10_000} {
		keys := tableKeys("", faketable.Spread(n))
		require.Len(t, keys, n, "n=%d", n)
		seen := map[string]bool{}
		for _, k := range keys {
			require.False(t, seen[k], "duplicate key %s", k)
			seen[k] = true
		}
		if n >= 100 {
			for _, dir := range []string{"_versions/", "data/", "_transactions/", "_deletions/", "_indices/"} {
				found := false
				for _, k := range keys {
					found = found || strings.HasPrefix(k, dir)
				}
				require.True(t, found, "n=%d: no key under %s", n, dir)
			}
		}
	}
}

func TestWriteTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t.lance")
	mtime := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	require.NoError(t, writeTable(dir, 200, 8, mtime, 4))
	n, dirs := 0, 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			dirs++
		} else {
			n++
			fi, err := d.Info()
			require.NoError(t, err)
			require.Equal(t, int64(8), fi.Size())
			require.True(t, fi.ModTime().Equal(mtime), "mtime of %s: got %s want %s", p, fi.ModTime(), mtime)
		}
		return nil
	}))
	require.Equal(t, 200, n)
	// The table's own, _versions, _transactions, _deletions, _indices, one
	// index directory (10 files) and data: the directories a purge fsyncs.
	require.Equal(t, 7, dirs, "directories")
}

// TestWriteMemTables holds the memory scenario's tables to a directory and
// one file each: the root's entry count is what that scenario measures.
func TestWriteMemTables(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, writeMemTables(root, 4, func(i int) bool { return i != 2 }))
	tables, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, tables, 3)
	for _, tb := range tables {
		require.True(t, tb.IsDir(), tb.Name())
		files, err := os.ReadDir(filepath.Join(root, tb.Name()))
		require.NoError(t, err)
		require.Len(t, files, 1, tb.Name())
		require.False(t, files[0].IsDir(), "%s/%s", tb.Name(), files[0].Name())
	}
}

func TestPromRequests(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.prom")
	require.NoError(t, os.WriteFile(p, []byte(`# HELP reaper_s3_http_requests_total S3 requests.
# TYPE reaper_s3_http_requests_total counter
reaper_s3_http_requests_total{code="200",operation="DeleteObjects"} 10
reaper_s3_http_requests_total{code="404",operation="GetObject"} 1
reaper_s3_http_requests_total{code="200",operation="GetObject"} 3
reaper_s3_http_requests_total{code="200",operation="PutObject"} 0
reaper_objects_deleted_total 10000
`), 0o644))
	got, err := promRequests(p)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"DeleteObjects": 10, "GetObject": 4}, got)
}

func TestRotateAndStats(t *testing.T) {
	require.Equal(t, []string{"b", "c", "a"}, rotate([]string{"a", "b", "c"}, 4))
	s := &series{Objects: 1000}
	for _, ms := range []int{50, 10, 30, 20, 40} {
		s.add(sample{Wall: time.Duration(ms) * time.Millisecond})
	}
	require.Equal(t, 30*time.Millisecond, s.median())
	require.Equal(t, 10*time.Millisecond, s.min())
	require.Equal(t, 50*time.Millisecond, s.max())
	require.InDelta(t, 1000/0.03, s.rate(), 1)
}

func TestReportMarksMisses(t *testing.T) {
	mk := func(scen, who string, n int, ms int, ops map[string]int64) *series {
		s := &series{Scenario: scen, Contender: who, Objects: n}
		s.add(sample{Wall: time.Duration(ms) * time.Millisecond, Server: ops, Client: ops})
		return s
	}
	r := &report{Config: config{Reps: 1}, Tools: tools{Versions: map[string]string{}}}
	r.Series = []*series{
		mk("s3/10000", "reaper", 10000, 1000, map[string]int64{"ListObjectsV2": 12, "DeleteObjects": 11, "GetObject": 5}),
		mk("s3/10000", "awscli", 10000, 3000, map[string]int64{"DeleteObject": 10000}),
		mk("local/10000", "reaper", 10000, 200, nil),
		mk("local/10000", "rm -rf", 10000, 100, nil),
	}
	ts := r.targets()
	require.Len(t, ts, 4)
	require.True(t, ts[0].Pass, "28 requests <= 10+10+8")
	require.True(t, ts[1].Pass)
	require.True(t, ts[2].Pass, "3x awscli")
	require.False(t, ts[3].Pass, "2x rm -rf")
	md := r.markdown()
	require.Contains(t, md, "**MISS**")
	require.Contains(t, md, "| awscli | 1 | 3.00 s |")
	require.NotContains(t, md, "Partial")

	r.Partial = true
	require.Contains(t, r.markdown(), "**Partial:", "a checkpoint says the run is unfinished")

	// The raw results re-render to the same report (--render).
	r.Partial = false
	dir := t.TempDir()
	require.NoError(t, saveRaw(dir, r))
	c := config{Repo: dir, Render: filepath.Join(dir, rawPath)}
	r.Config.Out = "OUT.md"
	require.NoError(t, saveRaw(dir, r))
	require.NoError(t, render(c))
	got, err := os.ReadFile(filepath.Join(dir, "OUT.md"))
	require.NoError(t, err)
	require.Equal(t, r.markdown(), string(got))
}

// TestGatewaySeesFiles checks the harness's two assumptions about
// versitygw: objects written as files in its posix data directory are
// listed through the S3 API, and its access log attributes requests to
// their bucket and operation. Skipped without the versitygw binary.
func TestGatewaySeesFiles(t *testing.T) {
	bin := os.Getenv("REAPER_VERSITYGW")
	if bin == "" {
		root, err := repoRoot()
		require.NoError(t, err)
		bin = filepath.Join(root, ".tools", "bin", "versitygw")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("versitygw not installed (make tools)")
	}
	ctx := context.Background()
	gw, err := startGateway(ctx, bin, t.TempDir())
	require.NoError(t, err)
	defer gw.stop()
	dir, err := gw.createBucket(ctx, "bench-smoke")
	require.NoError(t, err)
	require.NoError(t, writeTable(filepath.Join(dir, "db", "t0.lance"), 30, 4, time.Now().Add(-time.Hour), 2))
	off := gw.logOffset()
	n, err := gw.count(ctx, "bench-smoke", "db/t0.lance/")
	require.NoError(t, err)
	require.Equal(t, 30, n)
	got, err := gw.requestsSince(off, "bench-smoke")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"ListObjectsV2": 1}, got)
}

func TestGCSOperation(t *testing.T) {
	for _, tc := range []struct{ method, url, bucket, op string }{
		{"GET", "/storage/v1/b/bkt/o?prefix=db%2F&delimiter=%2F", "bkt", "list"},
		{"GET", "/storage/v1/b/bkt/o/db%2Ft0.deleted?alt=media", "bkt", "get"},
		{"GET", "/storage/v1/b/bkt/o/db%2Ft0.deleted", "bkt", "metadata"},
		{"POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart&ifGenerationMatch=0", "bkt", "upload"},
		{"DELETE", "/storage/v1/b/bkt/o/db%2Ft0.lance%2Fdata%2F1.lance?ifGenerationMatch=7", "bkt", "delete"},
		{"POST", "/batch/storage/v1", "", "other"},
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		bucket, op := gcsOperation(r)
		require.Equal(t, tc.bucket, bucket, tc.url)
		require.Equal(t, tc.op, op, tc.url)
	}
}

// TestFloorTarget checks the reaper-over-floor row: medians compared,
// PASS at or under 1.10x, MISS above, min and max shown, and the floor
// left out of the fastest-peer row.
func TestFloorTarget(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reaperMs     []int
		pass         bool
		wantGot      string
		wantVerdict  string
		wantAnalysis string // in the analysis paragraph, computed from the run
	}{
		{"within", []int{1050, 1000, 1200}, true, "1.05 s (1.05x; min 1.00 s, max 1.20 s)", "PASS",
			"1.05x the floor at 10000 objects, the limit ending at 8 in 1 run, 16 in 2 runs."},
		{"at the bound", []int{1100}, true, "1.10 s (1.10x; min 1.10 s, max 1.10 s)", "PASS",
			"The target is met with the defaults."},
		{"over", []int{1500, 1400, 1600}, false, "1.50 s (1.50x; min 1.40 s, max 1.60 s)", "**MISS**",
			"This run (medians of 3 alternating repetitions; the limit is where each run's `purge finished` log line says the adaptive delete concurrency ended): 1.50x the floor at 10000 objects, the limit ending at 8 in 1 run, 16 in 2 runs. At 10,000 objects the fixed costs (about 20 sequential round trips, and the ramp from 4 in flight) weigh most; at 100,000 they amortise. Above 1.10x: the gap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reaper := &series{Scenario: "s3/10000", Contender: "reaper", Objects: 10000}
			for i, ms := range tc.reaperMs {
				reaper.add(sample{Wall: time.Duration(ms) * time.Millisecond, Server: map[string]int64{"ListObjectsV2": 11, "DeleteObjects": 10},
					DeleteConc: []int{16, 8, 16}[i]})
			}
			floor := &series{Scenario: "s3/10000", Contender: floorName, Objects: 10000}
			for _, ms := range []int{900, 1000, 1300} {
				floor.add(sample{Wall: time.Duration(ms) * time.Millisecond, Server: map[string]int64{"ListObjectsV2": 10, "DeleteObjects": 10}})
			}
			r := &report{Config: config{Reps: 3}, Tools: tools{Versions: map[string]string{}}, Series: []*series{reaper, floor}}
			ts := r.targets()
			require.Len(t, ts, 2, "requests and floor rows only: the floor is no peer")
			got := ts[1]
			require.Equal(t, "wall, s3/10000: reaper / floor <= 1.10x", got.Name)
			require.Equal(t, "<= 1.10 s (floor median 1.00 s, min 900 ms, max 1.30 s)", got.Want)
			require.Equal(t, tc.wantGot, got.Got)
			require.Equal(t, tc.pass, got.Pass)
			md := r.markdown()
			require.Contains(t, md, fmt.Sprintf("| %s | %s | %s | %s |", got.Name, got.Want, got.Got, tc.wantVerdict))
			require.Contains(t, md, "| floor | 3 | 1.00 s | 900 ms | 1.30 s |", "the floor has its row in the scenario table")
			require.Contains(t, md, tc.wantAnalysis)
		})
	}
}

// TestWriteDueMarker checks the marker the S3 scenarios start from is due by
// both clocks: its body's deleted_at + TTL and its file's mtime + TTL (a
// marker PUT now is not due for an hour, which left the roots pass with
// nothing to purge).
func TestWriteDueMarker(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	p := filepath.Join(t.TempDir(), "tenants", "r0001", lifecycle.MarkerKey("old"))
	require.NoError(t, writeDueMarker(p, now))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	m, err := lifecycle.ParseMarker(b)
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.False(t, m.PurgeAfter(0).After(now), "deleted_at + ttl = %s, after %s", m.PurgeAfter(0), now)
	require.False(t, fi.ModTime().Add(m.TTL(0)).After(now), "mtime + ttl = %s, after %s", fi.ModTime().Add(m.TTL(0)), now)
}

func TestFinalConcurrency(t *testing.T) {
	finished := `{"time":"2026-12-01T16:03:30Z","level":"INFO","msg":"purge finished","table":"t","outcome":"purged","objects":1,"delete_concurrency":16}`
	for _, tc := range []struct {
		name, stderr string
		want         int
		err          string
	}{
		{name: "json log", stderr: `{"level":"INFO","msg":"pass started"}` + "\n" + finished + "\n", want: 16},
		{name: "text log", stderr: `level=INFO msg="purge finished" delete_concurrency=16`, err: `no "purge finished" line`},
		{name: "no line", stderr: "", err: `no "purge finished" line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := finalConcurrency([]byte(tc.stderr))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestMaxLiveHeap(t *testing.T) {
	log := []byte(`{"level":"WARN","msg":"x"}
gc 1 @0.010s 2%: 0.020+1.2+0.003 ms clock, 0.041+0.31/0.92/0+0.007 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 2 @0.51s 3%: 0.07+21+0.16 ms clock, 0.13+0.25/5.8/15+0.33 ms cpu, 109->112->64 MB, 128 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 3 @0.91s 3%: 0.07+21+0.16 ms clock, 0.13+0.25/5.8/15+0.33 ms cpu, 110->115->67 MB, 129 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
`)
	require.Equal(t, int64(67)<<20, maxLiveHeap(log))
	require.Zero(t, maxLiveHeap(nil))
}

func TestShippedLimits(t *testing.T) {
	root, err := repoRoot()
	require.NoError(t, err)
	s, err := shippedLimits(root)
	require.NoError(t, err)
	require.NotEmpty(t, s.GoMemLimit)
	require.Positive(t, s.LimitBytes)
	for q, want := range map[string]int64{"256Mi": 256 << 20, "1Gi": 1 << 30, "512": 512} {
		got, err := quantityBytes(q)
		require.NoError(t, err)
		require.Equal(t, want, got, q)
	}
}

// A full run keeps the guard's section, which a test measured, as the file
// had it.
func TestWriteResultsKeepsTheGuardSection(t *testing.T) {
	out := filepath.Join(t.TempDir(), "B.md")
	sec := guardBegin + "\n## Guard\nmeasured\n" + guardEnd + "\n"
	require.NoError(t, os.WriteFile(out, []byte("# old\n\n"+sec+"\n## Commands\nx\n"), 0o644))
	require.NoError(t, writeResults(out, &report{}))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, sec, guardMarks.of(string(b)))
}

func TestWithMemorySection(t *testing.T) {
	sec := memBegin + "\n## Memory\nnew\n" + memEnd + "\n\n"
	require.Equal(t, "# B\n\n"+sec+"## Commands\nx\n", memoryMarks.splice("# B\n\n## Commands\nx\n", sec), "before Commands")
	old := "# B\n\n" + memBegin + "\n## Memory\nold\n" + memEnd + "\n\n## Commands\nx\n"
	require.Equal(t, "# B\n\n"+sec+"## Commands\nx\n", memoryMarks.splice(old, sec), "replaced")
	require.Equal(t, "# B\n\n"+strings.TrimSuffix(sec, "\n"), memoryMarks.splice("# B\n", sec), "appended")
}
