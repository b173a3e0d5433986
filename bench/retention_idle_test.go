package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rconfig "github.com/lance-reaper/reaper/internal/config"
)

// --only retention-idle runs the idle-table scenarios alone, on S3, at
// 1,000 and 10,000 tables unless told otherwise.
func TestParseRetentionIdleFlags(t *testing.T) {
	c, err := parseFlags([]string{"--only", "retention-idle", "--retention", "s3"})
	require.NoError(t, err)
	require.Equal(t, []int{1000, 10000}, c.RetentionIdle)
	require.Equal(t, 3, c.RetentionIdlePasses)
	require.Empty(t, c.Sizes, "nothing but the idle scenarios runs")
	c, err = parseFlags([]string{"--quick"})
	require.NoError(t, err)
	require.Equal(t, []int{200}, c.RetentionIdle)
	c, err = parseFlags([]string{"--retention-idle-tables", "none"})
	require.NoError(t, err)
	require.Empty(t, c.RetentionIdle)
	for _, bad := range [][]string{
		{"--only", "retention-idle", "--retention", "local"},
		{"--only", "retention-idle", "--retention-idle-tables", "none"},
		{"--retention-idle-passes", "0"},
		{"--only", "idle"},
	} {
		_, err := parseFlags(bad)
		require.Error(t, err, "%v", bad)
	}
}

// A pass is what its series grew by between the scrape that saw it end
// and the one before.
func TestPassOfMetrics(t *testing.T) {
	scrape := func(s string) metricsText {
		m, err := parseMetrics(strings.NewReader(s))
		require.NoError(t, err)
		return m
	}
	before := scrape(`# HELP reaper_passes_total Purge passes finished.
reaper_passes_total{result="success"} 1
reaper_passes_total{result="partial"} 0
reaper_pass_duration_seconds_sum 12.5
reaper_pass_duration_seconds_count 1
reaper_s3_http_requests_total{code="200",operation="ListObjectsV2"} 9000
reaper_s3_http_requests_total{code="200",operation="GetObject"} 5000
reaper_retention_tables_total{result="nothing_to_do"} 1000
`)
	after := scrape(`reaper_passes_total{result="success"} 2
reaper_passes_total{result="partial"} 0
reaper_pass_duration_seconds_sum 12.75
reaper_pass_duration_seconds_count 2
reaper_s3_http_requests_total{code="200",operation="ListObjectsV2"} 10002
reaper_s3_http_requests_total{code="404",operation="HeadObject"} 1
reaper_s3_http_requests_total{code="200",operation="GetObject"} 5000
reaper_retention_tables_total{result="nothing_to_do"} 2000
`)
	require.Equal(t, 2.0, after.total("reaper_passes_total"))
	p := passOf(before, after)
	require.Equal(t, 250*time.Millisecond, p.Duration)
	require.Equal(t, "success", p.Result)
	require.Equal(t, map[string]int64{"ListObjectsV2": 1002, "HeadObject": 1}, p.Client)
	require.Equal(t, map[string]int64{"nothing_to_do": 1000}, p.Retention)
	first := passOf(metricsText{}, before)
	require.Equal(t, map[string]int64{"ListObjectsV2": 9000, "GetObject": 5000}, first.Client)
}

// The configuration the daemon runs with is one reaper loads, with
// retention enabled on the root in each regime.
func TestIdleConfigLoads(t *testing.T) {
	gw := &gateway{Endpoint: "http://127.0.0.1:9"}
	fx := retentionFixture{CutoffMs: time.Now().Add(-50 * time.Hour).UnixMilli()}
	fx.Tables = append(fx.Tables, struct {
		Name     string `json:"name"`
		Versions int    `json:"versions"`
	}{"t0", 5})
	for _, rg := range idleRegimes {
		p := filepath.Join(t.TempDir(), "reaper.yaml")
		require.NoError(t, os.WriteFile(p, []byte(idleConfig(gw, "bench-idle-10", fx, rg, 7*time.Second, "127.0.0.1:9999")), 0o600))
		cfg, err := rconfig.LoadEnviron(p, nil)
		require.NoError(t, err, rg.Name)
		require.Equal(t, "@every 7s", cfg.Schedule)
		require.Len(t, cfg.Roots, 1)
		r := cfg.RetentionFor(cfg.Roots[0].Retention)
		require.True(t, r.Enabled, rg.Name)
		switch rg.Name {
		case "young":
			require.Greater(t, r.OlderThan.D(), 50*time.Hour, "the cutoff is older than every version")
		case "kept":
			require.Equal(t, 5, r.KeepVersions)
			require.Equal(t, time.Second, r.OlderThan.D())
		}
	}
	require.Equal(t, 10*time.Second, idleInterval(0))
	require.Equal(t, 62*time.Second, idleInterval(170*time.Second))
}

// The targets: reaper retain and the daemon's steady pass within a fifth
// of the client's loop, the steady pass within a request a table, peak
// RSS within the shipped limit.
func TestRetentionIdleTargets(t *testing.T) {
	one := func(cont string, wall, call time.Duration, reqs int64) *retSeries {
		return &retSeries{Scenario: "idle-s3/1000", Contender: cont, Tables: 1000, Versions: 5, Files: 15000,
			Samples: []retSample{{Wall: wall, Call: call, MaxRSS: 60 << 20, Server: map[string]int64{"ListObjectsV2": reqs}}}}
	}
	n := 0
	pass := func(d time.Duration, reqs int64) daemonPass {
		n = n%3 + 1
		return daemonPass{Number: n, Duration: d, Result: "success", Server: map[string]int64{"ListObjectsV2": reqs}, Client: map[string]int64{"ListObjectsV2": reqs}}
	}
	r := &report{
		Config:        config{Only: "retention-idle"},
		RetentionIdle: []*retSeries{one(contReaper, 8*time.Second, 0, 14000), one(contLance, 12*time.Second, 10*time.Second, 16000)},
		IdleDaemons: []*idleDaemon{
			{Scenario: "idle-s3/1000", Regime: "young", Tables: 1000, Interval: 21 * time.Second, MaxRSS: 70 << 20,
				Command: "bin/reaper run --config idle-1000-young.yaml", Config: "schedule: \"@every 21s\"\n",
				Passes: []daemonPass{pass(8*time.Second, 14003), pass(10*time.Millisecond, 3), pass(12*time.Millisecond, 3)}},
			{Scenario: "idle-s3/1000", Regime: "kept", Tables: 1000, Interval: 21 * time.Second, MaxRSS: 400 << 20,
				Passes: []daemonPass{pass(8*time.Second, 14003), pass(900*time.Millisecond, 1003), pass(1100*time.Millisecond, 1003)}},
		},
		IdleLimits: shipped{Limit: "320Mi", LimitBytes: 320 << 20, GoMemLimit: "230MiB"},
	}
	got := map[string]bool{}
	for _, tg := range r.retentionIdleTargets() {
		got[tg.Name] = tg.Pass
	}
	require.Equal(t, map[string]bool{
		"idle retention, S3, 1000 tables: reaper retain <= 0.2x the client's optimize loop":                    false,
		"idle retention, S3, 1000 tables: reaper run's steady pass (young) <= 0.2x the client's optimize loop": true,
		"idle retention, S3, 1000 tables: reaper run's steady pass (young), requests per table":                true,
		"idle retention, S3, 1000 tables: reaper run's steady pass (kept) <= 0.2x the client's optimize loop":  true,
		"idle retention, S3, 1000 tables: reaper run's steady pass (kept), requests per table":                 false,
		"peak RSS, idle retention of 1000 tables, reaper retain and reaper run":                                false,
	}, got)
	s := r.retentionIdleSection()
	require.True(t, strings.HasPrefix(s, retIdleBegin))
	require.True(t, strings.HasSuffix(s, retIdleEnd+"\n"))
	require.Contains(t, s, "| idle-s3/1000 | kept, @every 21s | 2 | 900 ms | 0 ms / 0 ms | 1003: ListObjectsV2 1003 | 1.0030 | same |")
	require.Contains(t, s, "1.0030 (the most of 2 passes: ListObjectsV2 1003); 1.0000 a table net of the 3 requests")
	require.Contains(t, s, "#   schedule", "the daemon's configuration is shown with its command")
}

// The access log gives each request's operation and the server's time on
// it.
func TestReadLogTimes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	require.NoError(t, os.WriteFile(p, []byte(`log starts 2026-12-06 02:36:53 +0000 UTC
benchaccess bench-idle-50 [06/December/2026:02:36:54 +0000] 127.0.0.1 benchaccess OG2V s3_ListObjectsV2 - /bench-idle-50?delimiter=%2F&prefix=db%2Ft7.lance%2F 200 - 558 0 4 4 - aws-sdk-go-v2/1.48.0
benchaccess bench-idle-50 [06/December/2026:02:36:54 +0000] 127.0.0.1 benchaccess UO1B s3_GetObject db/t7.lance/_versions/1.manifest /bench-idle-50/db/t7.lance/_versions/1.manifest?x-id=GetObject 200 - 0 0 2 2 - aws-sdk-go-v2/1.48.0
benchaccess bench-idle-50 [06/December/2026:02:36:54 +0000] 127.0.0.1 benchaccess UO1C s3_ListObjectsV2 - /bench-idle-50?prefix=db%2Ft7.lance%2F_versions%2F 200 - 1846 0 8 8 - aws-sdk-go-v2/1.48.0
benchaccess other [06/December/2026:02:36:54 +0000] 127.0.0.1 benchaccess UO1D s3_ListObjectsV2 - /other?prefix=db 200 - 1846 0 99 99 -
`), 0o644))
	g := &gateway{AccessLog: p}
	count, ms, err := g.readLogTimes(0, "bench-idle-50")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"ListObjectsV2": 2, "GetObject": 1}, count)
	require.Equal(t, map[string]int64{"ListObjectsV2": 12, "GetObject": 2}, ms)
	require.Equal(t, "GetObject 2.00 ms, ListObjectsV2 6.00 ms", serverTimes(count, ms))
}
