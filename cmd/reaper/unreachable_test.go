package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// TestUnreachableEndpointWithin5s: every command run against an S3
// endpoint that is down says so, "cannot reach the endpoint ...", and
// exits 2 within 5 seconds, with the default retries: retain as every
// other command, and a pass from a configuration file as one of --root
// (it stops at the root's first request, not once per request). Down is
// refusing connections (nothing listens) or dropping them (a firewall:
// the connect is never answered, and objstore.DialTimeout bounds it).
func TestUnreachableEndpointWithin5s(t *testing.T) {
	for _, down := range []struct{ name, addr, why string }{
		{"refused", objstoretest.ClosedAddr(t), "connection refused"},
		{"dropped", objstoretest.DroppingAddr(t), "no answer to a connection within " + objstore.DialTimeout.String()},
	} {
		t.Run(down.name, func(t *testing.T) {
			t.Parallel()
			unreachableWithin5s(t, "http://"+down.addr, down.why)
		})
	}
}

func unreachableWithin5s(t *testing.T, closed, down string) {
	const root = "s3://reaper-down/db"
	opts := map[string]string{"aws_endpoint": closed, "allow_http": "true", "aws_region": "us-east-1",
		"aws_access_key_id": "reaper", "aws_secret_access_key": "reaper-secret"}
	var flags []string
	var yaml strings.Builder
	yaml.WriteString("log: {format: text}\nretention: {enabled: true}\nroots:\n  - uri: " + root + "\n    storage_options:\n")
	for k, v := range opts {
		flags = append(flags, "--storage-option", k+"="+v)
		fmt.Fprintf(&yaml, "      %s: %q\n", k, v)
	}
	cfg := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(yaml.String()), 0o644))
	const why = ": cannot reach the endpoint "
	fix := "; check the storage option aws_endpoint (and allow_http=true for http://) or AWS_ENDPOINT_URL_S3, and that the server is up"
	reason := why + closed + ": " + down + fix
	for _, tc := range []struct {
		name string
		args []string
		// last is stderr's last line; report, when set, a line of stdout.
		last, report string
	}{
		{"status", []string{"status", "--root", root}, "reaper: " + root + reason, ""},
		{"status --versions", []string{"status", "--versions", "--root", root}, "reaper: " + root + reason, ""},
		{"drop", []string{"drop", "--root", root, "t"}, "reaper: " + root + reason, ""},
		{"hold", []string{"hold", "--root", root, "--reason", "case 1", "t"}, "reaper: " + root + reason, ""},
		{"purge", []string{"purge", "--root", root}, "reaper: purge: " + root + reason, ""},
		{"retain", []string{"retain", "--root", root, "--older-than", "7d"}, "reaper: retain: " + root + reason, ""},
		{"retain --dry-run", []string{"retain", "--root", root, "--older-than", "7d", "--dry-run"}, "reaper: retain: " + root + reason, ""},
		{"purge --config", []string{"purge", "--config", cfg},
			"reaper: purge: 1 root(s) could not be reached, a configuration error (ROOTS FAILED above, or the failed entries without a name in the JSON, say what to set); nothing in them was purged",
			"  " + root + "  " + strings.TrimPrefix(reason, ": ")},
		{"retain --config", []string{"retain", "--config", cfg},
			"reaper: retain: 1 root(s) could not be reached, a configuration error (ROOTS FAILED above, or failed_roots in the JSON, say what to set); nothing in them was retained",
			"  " + root + "  " + strings.TrimPrefix(reason, ": ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append(tc.args, "--log-level", "error")
			if !strings.Contains(strings.Join(tc.args, " "), "--config") {
				args = append(args, flags...)
			}
			start := time.Now()
			code, stdout, stderr := run(t, args...)
			took := time.Since(start)
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Equal(t, tc.last, lastLine(stderr))
			if tc.report != "" {
				require.Contains(t, stdout, tc.report+"\n")
			}
			require.Less(t, took, 5*time.Second, "an unreachable endpoint is reported within 5 s")
		})
	}
}
