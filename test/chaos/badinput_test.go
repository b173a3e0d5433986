package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/worker"
)

// badCase is one bad input or fault from docs/SAFETY.md: what reaper is
// given, the exit status and output the user sees, and that nothing was
// deleted or changed.
type badCase struct {
	name string
	s3   bool
	// setup prepares the root; a due table "victim" and a live table "live"
	// are always there.
	setup func(t *testing.T, b *backend, victim *table)
	// args builds the command line; nil runs `purge -o json` on the root.
	args func(b *backend, endpoint string) []string
	code int
	// out must appear in stdout or stderr.
	out string
	// faults, when set, puts the fault proxy between reaper and S3.
	faults *faultConfig
	// unreachable hands args an endpoint nothing listens on.
	unreachable bool
	// halfway: the purge may delete the manifests before it fails; the
	// marker and every other table must stay (checkSafe).
	halfway bool
	// victimPurged: the due victim is purged, everything else stays.
	victimPurged bool
}

// purgeRoot is `purge -o json` on the root (through endpoint, if set).
func purgeRoot(extra ...string) func(b *backend, endpoint string) []string {
	return func(b *backend, endpoint string) []string {
		return append(append(purgeArgs(30*time.Second, shortSkew, "--set", "limits.retry_max_elapsed=1s"), b.rootArgs(endpoint)...), extra...)
	}
}

func cmdRoot(cmd string, extra ...string) func(b *backend, endpoint string) []string {
	return func(b *backend, endpoint string) []string {
		return append(append([]string{cmd}, b.rootArgs(endpoint)...), extra...)
	}
}

func withMarker(body string) func(t *testing.T, b *backend, v *table) {
	return func(t *testing.T, b *backend, v *table) {
		b.putAll(t, map[string][]byte{lifecycle.MarkerKey(v.name): []byte(body)})
	}
}

func withObject(key, body string) func(t *testing.T, b *backend, v *table) {
	return func(t *testing.T, b *backend, v *table) {
		b.putAll(t, map[string][]byte{strings.ReplaceAll(key, "NAME", v.name): []byte(body)})
	}
}

func badCases() []badCase {
	future := fmt.Sprintf(`{"deleted_at_ms":%d,"ttl_ms":1}`, time.Now().Add(24*time.Hour).UnixMilli())
	held := fmt.Sprintf(`{"version":1,"owner":"other-host/7/ab","token":"00112233445566778899aabbccddeeff","generation":1,"acquired_at_ms":%d,"renewed_at_ms":%[1]d,"expires_at_ms":%d}`,
		time.Now().UnixMilli(), time.Now().Add(time.Hour).UnixMilli())
	return []badCase{
		// Roots, options, flags, names.
		{name: "unsupported scheme", args: func(*backend, string) []string { return []string{"purge", "--root", "http://example.com/db"} }, code: 2, out: "unsupported scheme"},
		{name: "s3 URI without bucket", args: func(*backend, string) []string { return []string{"purge", "--root", "s3:///db"} }, code: 2, out: "missing bucket"},
		{name: "file URI with a host", args: func(*backend, string) []string { return []string{"purge", "--root", "file://host/db"} }, code: 2, out: "file URIs take no host"},
		{name: "root does not exist", args: func(*backend, string) []string {
			return []string{"purge", "-o", "json", "--root", "/nonexistent/reaper-chaos"}
		}, code: 2, out: "reaper: purge: /nonexistent/reaper-chaos: directory does not exist; create it (mkdir -p /nonexistent/reaper-chaos)"},
		{name: "storage option on a local root", args: purgeRoot("--storage-option", "aws_region=eu-west-1"), code: 2, out: "storage options apply to az://, gs://, s3:// and s3+ddb:// locations only"},
		{name: "unknown storage option", s3: true, args: purgeRoot("--storage-option", "aws_endpont=http://x"), code: 2, out: `unknown storage option "aws_endpont"`},
		{name: "plain http endpoint without allow_http", s3: true, args: func(b *backend, _ string) []string {
			return []string{"purge", "--root", b.uri, "--storage-option", "aws_endpoint=" + b.srv.Endpoint}
		}, code: 2, out: "pass allow_http=true"},
		{name: "unknown --set key", args: purgeRoot("--set", "limits.nope=1"), code: 2, out: `"limits.nope": not a settable key`},
		{name: "zero lease TTL", args: purgeRoot("--set", "defaults.lease_ttl=0s"), code: 2, out: "defaults.lease_ttl = 0s: must be positive"},
		{name: "table name with a slash", args: purgeRoot("../victim"), code: 2, out: "invalid table name"},
		{name: "drop of a name with a backslash", args: cmdRoot("drop", `a\b`), code: 2, out: "invalid table name"},
		{name: "named table is live", args: purgeRoot("live"), code: 1, out: "table is live"},
		{name: "named table does not exist", args: purgeRoot("nope"), code: 1, out: "table not found"},
		{name: "drop of a dropped table", args: cmdRoot("drop", "victim"), code: 1, out: "already soft-deleted"},
		// Markers.
		{name: "marker is not JSON", setup: withMarker("garbage"), code: 1, out: "invalid marker: not a JSON object"},
		{name: "marker with trailing data", setup: withMarker(`{"deleted_at_ms":1,"ttl_ms":1}}`), code: 1, out: "trailing data"},
		{name: "marker with deleted_at_ms twice", setup: withMarker(`{"deleted_at_ms":1,"ttl_ms":1,"deleted_at_ms":9999999999999}`), code: 1, out: `key \"deleted_at_ms\" appears twice`},
		{name: "marker with a negative time", setup: withMarker(`{"deleted_at_ms":-5,"ttl_ms":1}`), code: 1, out: "deleted_at_ms is negative"},
		{name: "marker with a float", setup: withMarker(`{"deleted_at_ms":1.5,"ttl_ms":1}`), code: 1, out: "want a non-negative integer"},
		{name: "marker with a string", setup: withMarker(`{"deleted_at_ms":"1","ttl_ms":1}`), code: 1, out: "want a non-negative integer"},
		{name: "marker without deleted_at_ms", setup: withMarker(`{"ttl_ms":1}`), code: 1, out: "missing deleted_at_ms"},
		{name: "marker dated in the future", setup: withMarker(future), code: 1, out: "in the future"},
		{name: "marker without ttl_ms (default 7d)", setup: withMarker(`{"deleted_at_ms":` + fmt.Sprint(time.Now().UnixMilli()) + `}`), code: 0, out: "not due until"},
		{name: "TTL below safety.min_ttl", args: func(b *backend, _ string) []string {
			return append([]string{"purge", "-o", "json"}, b.rootArgs("")...)
		}, code: 0, out: "short ttl"},
		// Holds, leases, writers, switches.
		{name: "legal hold", setup: withObject("NAME.reaper-hold", `{"reason":"case 42"}`), code: 0, out: "held: legal hold (case 42)"},
		{name: "unreadable hold", setup: withObject("NAME.reaper-hold", "garbage"), code: 0, out: "unreadable hold"},
		{name: "lease held by another process", setup: withObject("NAME.reaper-lock", held), code: 0, out: "locked: lease held by other-host/7/ab"},
		{name: "unreadable lease", setup: withObject("NAME.reaper-lock", "garbage"), code: 0, out: "locked: unreadable lease"},
		{name: "file written after the drop", setup: func(t *testing.T, b *backend, v *table) {
			waitNextSecond(t, b, lifecycle.MarkerKey(v.name))
			b.putAll(t, map[string][]byte{lifecycle.TableDir(v.name) + "_versions/9.manifest": []byte("revived")})
		}, code: 0, out: "conflict: "},
		{name: "root paused", setup: withObject(worker.PauseKey, ""), code: 3, out: "paused by _reaper/PAUSE"},
		{name: "blast radius", args: purgeRoot("--set", "safety.blast_radius_max_tables=0", "--set", "safety.blast_radius_max_percent=10", "--set", "safety.blast_radius_min_tables=1"), code: 3, out: "refused: blast radius"},
		{name: "dry run", args: purgeRoot("--dry-run"), code: 0, out: `"dry_run": true`},
		{name: "retention disabled", args: purgeRoot("--set", "safety.retention_enabled=false"), code: 0, out: `"dry_run": true`},
		{name: "revive of a partly purged table", setup: func(t *testing.T, b *backend, v *table) {
			deleteManifests(t, b, nil, v)
		}, args: cmdRoot("revive", "victim"), code: 1, out: "run purge to finish it"},
		{name: "revive of a table with a purge commit", setup: func(t *testing.T, b *backend, v *table) {
			killedAfterManifests(t, b, nil, v)
		}, args: cmdRoot("revive", "victim"), code: 1, out: "partially purged: cannot revive"},
		{name: "revive of a committed table with all its data", setup: func(t *testing.T, b *backend, v *table) {
			killedAfterManifests(t, b, nil, &table{name: v.name, marker: v.marker}) // committed, nothing deleted yet
		}, args: cmdRoot("revive", "victim"), code: 1, out: "partially purged: cannot revive"},
		{name: "symbolic link <name>.lance to outside the root, with a due marker", setup: func(t *testing.T, b *backend, v *table) {
			require.NoError(t, os.Symlink(filepath.Join(b.parentDir, b.base+"-outside"), filepath.Join(b.dir, "link.lance")))
			b.putAll(t, map[string][]byte{"link.deleted": v.marker})
		}, args: purgeRoot("link"), code: 1, out: "link.lance is not a directory"},
		{name: "symbolic link <name>.lance, whole root purged", setup: func(t *testing.T, b *backend, v *table) {
			require.NoError(t, os.Symlink(filepath.Join(b.parentDir, b.base+"-outside"), filepath.Join(b.dir, "link.lance")))
			b.putAll(t, map[string][]byte{"link.deleted": v.marker})
		}, code: 1, out: "link.lance is not a directory", victimPurged: true},
		{name: "object <name>.lance on S3, with a due marker", s3: true, setup: func(t *testing.T, b *backend, v *table) {
			b.putAll(t, map[string][]byte{"obj.lance": []byte("no table"), "obj.deleted": v.marker})
		}, code: 1, out: "obj.lance is not a directory", victimPurged: true},
		{name: "revive of a symbolic link <name>.lance", setup: func(t *testing.T, b *backend, v *table) {
			require.NoError(t, os.Symlink(filepath.Join(b.parentDir, b.base+"-outside"), filepath.Join(b.dir, "link.lance")))
			b.putAll(t, map[string][]byte{"link.deleted": v.marker})
		}, args: cmdRoot("revive", "link"), code: 1, out: "not a table: link.lance is not a directory"},
		// S3 faults.
		{name: "wrong secret key", s3: true, args: func(b *backend, _ string) []string {
			return append(append(purgeArgs(30*time.Second, shortSkew), swapOpt(b.rootArgs(""), "aws_secret_access_key", "wrong")...), "--set", "limits.retry_max_elapsed=1s")
		}, code: 2, out: "SignatureDoesNotMatch"}, // a configuration error: exit 2 names what to set
		{name: "missing bucket", s3: true, args: func(b *backend, _ string) []string {
			args := append(purgeArgs(30*time.Second, shortSkew), b.rootArgs("")...)
			args[len(purgeArgs(30*time.Second, shortSkew))+1] = "s3://reaper-chaos-no-such-bucket/db"
			return args
		}, code: 2, out: "the bucket does not exist"},
		{name: "server unreachable", s3: true, unreachable: true, args: func(b *backend, endpoint string) []string {
			return append(append(purgeArgs(30*time.Second, shortSkew), b.rootArgs(endpoint)...), "--set", "limits.retry_max_elapsed=1s")
		}, code: 2, out: "connection refused"},
		{name: "every request 503 SlowDown", s3: true, faults: &faultConfig{rates: map[fault]float64{faultSlowDown: 1}},
			code: 1, out: "SlowDown"},
		{name: "DeleteObjects answers AccessDenied for a key", s3: true, faults: &faultConfig{
			keyErrorRate: 1, keyErrorCodes: []string{"AccessDenied"}, keyFilter: func(k string) bool { return strings.Contains(k, "/data/") },
		}, code: 1, out: "AccessDenied", halfway: true},
	}
}

// swapOpt replaces the value of one --storage-option.
func swapOpt(args []string, key, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if strings.HasPrefix(a, key+"=") {
			out[i] = key + "=" + value
		}
	}
	return out
}

// TestBadInputs checks every row of docs/SAFETY.md: the exit status, the
// message, and that nothing was deleted or changed. (A purge that fails
// half-way, as with AccessDenied on a data file, deleted the manifests: the
// check then is checkSafe's, marker kept.)
func TestBadInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range badCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := localBackend(t)
			if tc.s3 {
				b = s3Backend(t, "db")
			}
			f := newFixture(newRand(7), mix{kindDue: 1, kindLive: 1}, [2]int{8, 8})
			f.rename(f.tables[0], "victim") // names the cases refer to
			f.rename(f.tables[1], "live")
			f.write(t, b)
			victim := f.tables[0]
			if tc.setup != nil {
				tc.setup(t, b, victim)
			}
			endpoint := ""
			if tc.unreachable {
				endpoint = "http://" + objstoretest.ClosedAddr(t)
			}
			if tc.faults != nil {
				px := newProxy(t, b.srv, 7)
				px.set(*tc.faults)
				endpoint = px.URL()
			}
			before := take(t, b)
			args := purgeRoot()
			if tc.args != nil {
				args = tc.args
			}
			r := reaper(t, args(b, endpoint)...)
			t.Logf("exit %d; %s", r.code, firstLine(r, tc.out))
			require.Equal(t, tc.code, r.code, "%s", r)
			require.Contains(t, string(r.stdout)+string(r.stderr), tc.out, "%s", r)
			after := take(t, b)
			if tc.halfway {
				checkSafe(t, f, after, tc.name)
				require.Equal(t, markerOriginal, stateOf(victim, after).marker)
				return
			}
			if tc.victimPurged {
				require.Equal(t, "purged", report(t, r).outcomes()["victim"], "%s", r)
				for k := range before {
					if strings.HasPrefix(k, "victim.") {
						delete(before, k)
					}
				}
			}
			for k := range before {
				if strings.HasSuffix(k, lifecycle.LockSuffix) {
					delete(before, k) // a lease the case put there may be taken over
				}
			}
			for k := range after {
				if strings.HasSuffix(k, lifecycle.LockSuffix) {
					delete(after, k)
				}
			}
			require.Equal(t, before, after, "nothing may be deleted or changed")
		})
	}
}

// firstLine is the first output line holding want, for the log.
func firstLine(r result, want string) string {
	for _, l := range strings.Split(string(r.stdout)+string(r.stderr), "\n") {
		if strings.Contains(l, want) {
			return strings.TrimSpace(l)
		}
	}
	return "(not found)"
}

// TestRootPathWithURICharacters: a local root whose path holds characters
// that mean something in a URI ('#', '?', '%', ' ') is the root purged, and
// its neighbour without them is untouched. (The canonical file:// URI of
// such a root used to parse back to the neighbour: '/data/db#1' purged
// '/data/db'.)
func TestRootPathWithURICharacters(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"#1", "?x=1", "%41", " copy"} {
		t.Run(suffix, func(t *testing.T) {
			t.Parallel()
			neighbour := localBackend(t)
			dir := neighbour.dir + suffix
			require.NoError(t, os.MkdirAll(dir, 0o755))
			target := openBackend(t, "local", dir, nil, dir, nil)
			var fs []*fixture
			for _, b := range []*backend{neighbour, target} {
				f := newFixture(newRand(3), mix{kindDue: 1, kindLive: 1}, [2]int{5, 5})
				f.write(t, b)
				fs = append(fs, f)
			}
			before := take(t, neighbour)
			r := reaper(t, append(purgeArgs(30*time.Second, shortSkew), "--root", dir)...)
			require.Equal(t, 0, r.code, "%s", r)
			require.Len(t, report(t, r).Purged, 1, "%s", r)
			require.Equal(t, before, take(t, neighbour), "the neighbour root %s was touched", neighbour.dir)
			ok, why := purgedAll(fs[1], take(t, target))
			require.True(t, ok, "%s: %s", dir, why)
		})
	}
}
