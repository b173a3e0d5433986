package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/worker"
)

// TestQuietAndLogs: drop and hold print their one result line and no INFO
// log beside it; -q prints nothing on success.
func TestQuietAndLogs(t *testing.T) {
	b := localBackend(t)
	b.writeTable(t, "a", time.Now().Add(-time.Hour))
	b.writeTable(t, "b", time.Now().Add(-time.Hour))
	root := b.opts.Root
	for _, tc := range []struct {
		name   string
		args   []string
		stdout string // prefix; "" = empty
	}{
		{"drop", []string{"drop", "--root", root, "a"}, "a: dropped (soft-deleted): ttl 7d"},
		{"hold", []string{"hold", "--root", root, "--reason", "case 1", "a"}, "a: held (case 1)"},
		{"drop -q", []string{"drop", "-q", "--root", root, "b"}, ""},
		{"hold -q", []string{"hold", "--quiet", "--root", root, "--reason", "x", "b"}, ""},
		{"release -q", []string{"release", "-q", "--root", root, "a", "b"}, ""},
		{"status -q", []string{"status", "-q", "--root", root}, "NAME"},
		// purge and run read the configuration's log.level (info by
		// default); -q used to lose to it and print INFO lines.
		{"purge -q", []string{"purge", "-q", "--root", root}, ""},
		{"purge -q --set", []string{"purge", "-q", "--root", root, "--set", "limits.table_concurrency=2"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitOK, code, stderr)
			require.Empty(t, stderr)
			if tc.stdout == "" {
				require.Empty(t, stdout)
			} else {
				require.True(t, strings.HasPrefix(stdout, tc.stdout), stdout)
				if tc.name != "status -q" { // status's result is its table
					require.Equal(t, 1, strings.Count(stdout, "\n"), stdout)
				}
			}
		})
	}
	// A failure still shows under -q.
	code, stdout, _ := run(t, "release", "-q", "--root", root, "a")
	require.Equal(t, exitFailed, code)
	require.Equal(t, "a: not released: it has no legal hold; nothing to release\n", stdout)
}

func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := worker.Progress{Root: "s3://b/db", Table: "events", TotalObjects: 50000, TotalBytes: 20 << 20, Started: t0}
	for _, tc := range []struct {
		name string
		ev   func(worker.Progress) worker.Progress
		now  time.Time
		want string
	}{
		{"walked", func(e worker.Progress) worker.Progress { return e }, t0,
			"progress: events (s3://b/db): 0/50000 objects (0%), 0 B of 20.0 MiB, rate not known yet"},
		{"midway", func(e worker.Progress) worker.Progress { e.Objects, e.Bytes = 12000, 5<<20; return e }, t0.Add(3 * time.Second),
			"progress: events (s3://b/db): 12000/50000 objects (24%), 5.0 MiB of 20.0 MiB, 4000 objects/s, ETA 10s"},
		{"done", func(e worker.Progress) worker.Progress { e.Objects, e.Bytes, e.Done = 50000, 20<<20, true; return e }, t0.Add(12 * time.Second),
			"progress: events (s3://b/db): done, 50000 objects, 20.0 MiB in 12s"},
		{"retention", func(e worker.Progress) worker.Progress {
			e.Objects, e.Bytes, e.Retention = 12000, 5<<20, true
			return e
		}, t0.Add(3 * time.Second),
			"progress: events (s3://b/db), version retention: 12000/50000 objects (24%), 5.0 MiB of 20.0 MiB, 4000 objects/s, ETA 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, progressLine(tc.ev(ev), tc.now))
		})
	}
}

// TestPurgeProgress: --progress prints each purged table's lines on
// stderr, ending with its done line.
func TestPurgeProgress(t *testing.T) {
	f := newPurgeFixture(t)
	o := f.opts(false, "due")
	var errOut bytes.Buffer
	o.Stderr, o.Progress = &errOut, true
	var out bytes.Buffer
	require.NoError(t, runPurge(context.Background(), o, &out))
	objs := f.sizes["due"][0]
	require.Contains(t, errOut.String(), "progress: due (file://"+f.b.opts.Root+"): 0/"+itoa(objs)+" objects (0%)")
	require.Contains(t, errOut.String(), "progress: due (file://"+f.b.opts.Root+"): done, "+itoa(objs)+" objects")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
