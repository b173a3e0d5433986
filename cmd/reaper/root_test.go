package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"usage", usagef("bad"), 2},
		{"wrapped usage", fmt.Errorf("x: %w", usagef("bad")), 2},
		{"invalid name", fmt.Errorf("x: %w", reaper.ErrInvalidName), 2},
		{"failed tables", &failedError{op: "purge", failed: 1, all: 2}, 1},
		{"other", errors.New("list root: connection refused"), 1},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, exitCode(tc.err), tc.name)
	}
}

// TestCommandLine runs whole command lines through execute.
func TestCommandLine(t *testing.T) {
	root := t.TempDir()
	lancetest.Small(1).Write(t, filepath.Join(root, lifecycle.TableDir("t")), time.Now().Add(-time.Hour))
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name      string
		args      []string
		code      int
		stderr    []string
		stdout    []string
		stdoutNot string
	}{
		{"help states exit codes", []string{"--help"}, 0, nil, []string{"EXIT STATUS", "2  usage or configuration error"}, ""},
		{"version", []string{"version"}, 0, nil, []string{"reaper dev\n"}, ""},
		{"no root", []string{"status"}, 2, []string{"reaper: --root is required"}, nil, ""},
		{"bad uri", []string{"status", "--root", "http://example.com/db"}, 2,
			[]string{"http://example.com/db", "/abs/path, file:///abs/path, s3://bucket/prefix"}, nil, ""},
		{"missing root dir", []string{"status", "--root", missing}, 2, []string{missing, "does not exist"}, nil, ""},
		{"unknown storage option", []string{"status", "--root", "s3://bucket/db", "--storage-option", "aws_regoin=us-east-1"}, 2,
			[]string{`unknown storage option "aws_regoin"`, "aws_region"}, nil, ""},
		{"storage option on a file root", []string{"status", "--root", root, "--storage-option", "aws_region=us-east-1"}, 2,
			[]string{"aws_region", "s3:// and s3+ddb:// roots only"}, nil, ""},
		{"storage option without =", []string{"status", "--root", "s3://bucket/db", "--storage-option", "aws_region"}, 2,
			[]string{`--storage-option "aws_region": missing '='`}, nil, ""},
		{"bad ttl", []string{"drop", "--root", root, "--ttl", "7 days", "t"}, 2, []string{`"7 days"`, "7d"}, nil, ""},
		{"zero ttl", []string{"drop", "--root", root, "--ttl", "0", "t"}, 2, []string{"not positive"}, nil, ""},
		{"negative ttl", []string{"drop", "--root", root, "--ttl", "-1h", "t"}, 2, []string{"not positive"}, nil, ""},
		{"bad default ttl", []string{"status", "--root", root, "--default-ttl", "x"}, 2, []string{"--default-ttl"}, nil, ""},
		{"bad skew", []string{"status", "--root", root, "--skew-allowance", "-5m"}, 2, []string{"--skew-allowance"}, nil, ""},
		{"unknown flag", []string{"status", "--root", root, "--bogus"}, 2, []string{"unknown flag: --bogus", "reaper status --help"}, nil, ""},
		{"bad output", []string{"status", "--root", root, "-o", "yaml"}, 2, []string{`-o "yaml": want table or json`}, nil, ""},
		{"bad log format", []string{"status", "--root", root, "--log-format", "xml"}, 2, []string{"--log-format"}, nil, ""},
		{"unknown command", []string{"prune"}, 2, []string{`unknown command "prune"`, `"purge"`}, nil, ""},
		{"drop without names", []string{"drop", "--root", root}, 2, []string{"name at least one table"}, nil, ""},
		{"invalid name", []string{"drop", "--root", root, "t", "a/b"}, 2, []string{"invalid table name"}, nil, "t: dropped"},
		{"drop missing table", []string{"drop", "--root", root, "nope"}, 1, []string{"1 of 1 table(s) failed"}, []string{"nope: not dropped: not found"}, ""},
		{"drop with day ttl", []string{"drop", "--root", root, "--ttl", "2d", "t"}, 0, nil, []string{"t: dropped (soft-deleted): ttl 2d"}, ""},
		{"status table", []string{"status", "--root", "file://" + root}, 0, nil, []string{"NAME", "PURGE_AFTER", "soft_deleted", "2d", "due in 2d"}, ""},
		{"purge nothing due", []string{"purge", "--root", root}, 0, nil, []string{"reclaimed 0 objects, 0 B from 0 tables; 1 skipped, 0 failed"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			for _, s := range tc.stderr {
				require.Contains(t, stderr.String(), s)
			}
			for _, s := range tc.stdout {
				require.Contains(t, stdout.String(), s)
			}
			if tc.stdoutNot != "" {
				require.NotContains(t, stdout.String(), tc.stdoutNot)
			}
			if code != 0 {
				require.True(t, strings.HasPrefix(stderr.String(), "reaper: ") || strings.Contains(stderr.String(), "\nreaper: "), stderr.String())
			}
		})
	}
}

func TestRelativeRoot(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("db", 0o755))
	lancetest.Small(1).Write(t, filepath.Join(dir, "db", lifecycle.TableDir("t")), time.Now())
	var out bytes.Buffer
	require.NoError(t, runStatus(context.Background(), statusOptions{storeOptions: storeOptions{globalOptions: quiet(), Root: "db"}, Output: "json"}, &out))
	require.Contains(t, out.String(), `"name": "t"`)

	got, err := resolveRoot("./db")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "db"), got)
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"7d", 7 * day, false},
		{"1d12h", 36 * time.Hour, false},
		{"36h", 36 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"1ms", time.Millisecond, false},
		{"1.5d", 36 * time.Hour, false},
		{"0.5d", 12 * time.Hour, false},
		{" 2d ", 48 * time.Hour, false},
		{"0", 0, true},
		{"0d", 0, true},
		{"-1d", 0, true},
		{"-5m", 0, true},
		{"1d-1h", 0, true},
		{"d", 0, true},
		{"7 days", 0, true},
		{"", 0, true},
	}
	for _, tc := range tests {
		got, err := parseDuration(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		// One grammar: what a flag takes, YAML, env and --set take too.
		same, err := config.ParseDuration(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, got, same, tc.in)
	}
}

func TestFormatting(t *testing.T) {
	durations := map[time.Duration]string{
		7 * day:                     "7d",
		36 * time.Hour:              "1d12h",
		90 * time.Minute:            "1h30m",
		time.Hour:                   "1h",
		45 * time.Second:            "45s",
		10 * time.Millisecond:       "10ms",
		7*day + 5*time.Minute:       "7d5m",
		time.Hour + 5*time.Second:   "1h0m5s",
		0:                           "0s",
		3*time.Hour + 2*time.Second: "3h0m2s",
	}
	for d, want := range durations {
		require.Equal(t, want, formatDuration(d), "%v", d)
	}
	sizes := map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"}
	for n, want := range sizes {
		require.Equal(t, want, humanBytes(n), "%d", n)
	}
}

func TestParseStorageOptions(t *testing.T) {
	m, err := parseStorageOptions([]string{"aws_region=us-east-1", "aws_endpoint=http://h:1/?a=b"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"aws_region": "us-east-1", "aws_endpoint": "http://h:1/?a=b"}, m)
	_, err = parseStorageOptions([]string{"aws_region=x", "AKIA/secret+Value"})
	require.Equal(t, exitUsage, exitCode(err))
	require.NotContains(t, err.Error(), "secret", "a malformed option may be a secret: never echo it")
	require.Contains(t, err.Error(), "number 2")
	for _, bad := range [][]string{{"novalue"}, {"=x"}, {"a=1", "a=2"}} {
		_, err := parseStorageOptions(bad)
		require.Equal(t, exitUsage, exitCode(err), "%v", bad)
	}
}

// Credentials in a --root URI are refused with exit status 2 and never
// echoed, by the single-root commands as by purge.
func TestRootWithCredentialsIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"status", "--root", "s3://AKIAEXAMPLE:SeCrEt@bucket/prefix"},
		{"purge", "--root", "s3://AKIAEXAMPLE:SeCrEt@bucket/prefix"},
		{"drop", "--root", "s3://AKIAEXAMPLE:SeCrEt@bucket/prefix", "t"},
	} {
		var stdout, stderr strings.Builder
		code := execute(context.Background(), args, &stdout, &stderr)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr.String())
		require.NotContains(t, stdout.String()+stderr.String(), "SeCrEt", "%v", args)
		require.Contains(t, stderr.String(), "storage options", "%v", args)
	}
}
