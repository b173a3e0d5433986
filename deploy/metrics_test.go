package deploy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// exported is what a real `reaper purge` pass writes with --textfile: every
// metric family it registers, by name.
type exported map[string]*dto.MetricFamily

// labelValues returns the values the family's series carry for label, and
// whether any series carries it.
func (e exported) labelValues(family, label string) (map[string]bool, bool) {
	mf := e[family]
	if mf == nil {
		return nil, false
	}
	vals, found := map[string]bool{}, false
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				vals[lp.GetValue()], found = true, true
			}
		}
	}
	if mf.GetType() == dto.MetricType_HISTOGRAM && label == "le" {
		return map[string]bool{}, true
	}
	return vals, found
}

// reaperNames lists the reaper_* families.
func (e exported) reaperNames() []string {
	var names []string
	for n := range e {
		if strings.HasPrefix(n, "reaper_") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

var (
	passOnce   sync.Once
	passResult exported // both passes' families
	firstPass  exported // the main pass's alone
	passErr    string
)

// realMetrics runs one real purge pass (once per test binary) and returns
// the families it exported. The pass covers three roots so that every
// family has a series: a local root with a due, a live and a not-yet-due
// table; a local root whose three due tables exceed the blast-radius cap
// (reaper_roots_refused_total); and an S3 root on a versitygw server
// (reaper_s3_http_requests_total).
func realMetrics(t *testing.T) exported {
	t.Helper()
	passOnce.Do(func() {
		// A failed require inside Do would leave passResult nil for the other
		// tests; record the failure instead and report it in each.
		ft := &onceT{T: t}
		func() {
			defer func() {
				if r := recover(); r != nil && r != errOnceFailed {
					panic(r)
				}
			}()
			passResult = runRealPass(ft)
		}()
		passErr = ft.msg
	})
	require.Empty(t, passErr, "the real purge pass failed")
	require.NotNil(t, passResult)
	return passResult
}

var errOnceFailed = fmt.Errorf("real pass failed")

// onceT turns a failed require in the shared pass into a message.
type onceT struct {
	*testing.T
	msg string
}

func (o *onceT) Errorf(format string, args ...any) { o.msg += fmt.Sprintf(format, args...) + "\n" }
func (o *onceT) FailNow()                          { panic(errOnceFailed) }

func runRealPass(t *onceT) exported {
	dir := t.TempDir()
	s3 := startVersityGW(t, filepath.Join(dir, "s3"))

	local := filepath.Join(dir, "db")
	require.NoError(t, os.MkdirAll(local, 0o755))
	past := time.Now().Add(-time.Hour)
	for _, n := range []string{"events", "users", "sessions"} {
		writeTable(t, local, n, past)
	}
	crowded := filepath.Join(dir, "crowded")
	require.NoError(t, os.MkdirAll(crowded, 0o755))
	for _, n := range []string{"t1", "t2", "t3"} {
		writeTable(t, crowded, n, past)
	}
	// The S3 root: versitygw's posix backend serves <data>/<bucket>/<key>.
	bucketDir := filepath.Join(s3.dataDir, s3.bucket)
	writeTable(t, filepath.Join(bucketDir, "lancedb"), "vectors", past)
	s3root := "s3://" + s3.bucket + "/lancedb"

	// Drop with reaper itself: a one-second TTL (purged with
	// --allow-short-ttl), and a week for the table that stays soft-deleted.
	mustRun := func(args ...string) {
		r := runReaper(t, nil, args...)
		require.Equal(t, 0, r.code, "reaper %s: %s", strings.Join(args, " "), r)
	}
	mustRun("drop", "--root", local, "--ttl", "1s", "events")
	mustRun("drop", "--root", local, "--ttl", "7d", "sessions")
	mustRun("drop", "--root", crowded, "--ttl", "1s", "t1", "t2", "t3")
	mustRun(append([]string{"drop", "--root", s3root, "--ttl", "1s"}, append(s3.flags(), "vectors")...)...)
	// Due once the store's clock has passed the drops by the TTL: on S3 it
	// is read from the Date header, which may trail this host's clock.
	waitDue(t, local, nil, "events")
	waitDue(t, crowded, nil, "t1", "t2", "t3")
	waitDue(t, s3root, s3.flags(), "vectors")

	cfg := filepath.Join(dir, "reaper.yaml")
	// Version retention on the local root: its gauges and per-root
	// counters are exported (its tables, reaper's placeholders, are
	// unsupported: nothing of them is deleted).
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`roots:
  - uri: %s
    retention: {enabled: true}
  - uri: %s
  - uri: %s
    storage_options:
%s
safety:
  blast_radius_max_tables: 2
`, local, crowded, s3root, s3.yamlOptions("      "))), 0o644))
	prom := filepath.Join(dir, "reaper.prom")
	r := runReaper(t, nil, "purge", "--config", cfg, "--allow-short-ttl", "--textfile", prom, "-o", "json")
	// Exit status 3: the crowded root is refused by the blast-radius cap,
	// on purpose, so the refusal metrics exist.
	require.Equal(t, 3, r.code, "purge pass: %s", r)

	// The pass did what the metrics will say.
	var rep struct {
		Purged  []struct{ Root, Name string } `json:"purged"`
		Skipped []struct{ Root, Name, Reason string }
		Failed  []struct{ Root, Name, Error string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "purge -o json: %s", r)
	var purged, skipped []string
	for _, p := range rep.Purged {
		purged = append(purged, p.Name)
	}
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Name+": "+s.Reason)
	}
	slices.Sort(purged)
	require.Equal(t, []string{"events", "vectors"}, purged, "purged tables; skipped: %v", skipped)
	require.Empty(t, rep.Failed)
	require.False(t, tableExists(t, local, "events"))
	require.True(t, tableExists(t, local, "sessions"))
	require.True(t, tableExists(t, crowded, "t1"), "the blast-radius cap must keep the crowded root")

	e := readTextfile(t, prom)

	// A second pass with per-root labels off: the per-root families are then
	// created at zero for every label value (roots_refused_total by every
	// reason), which gives the label values the rules may match.
	flat := filepath.Join(dir, "flat.prom")
	r = runReaper(t, nil, "purge", "--root", local, "--set", "metrics.per_root_labels=false", "--textfile", flat)
	require.Equal(t, 0, r.code, "second pass: %s", r)
	firstPass = e
	merged := exported{}
	for name, mf := range e {
		merged[name] = proto.Clone(mf).(*dto.MetricFamily)
	}
	for name, mf := range readTextfile(t, flat) {
		if have := merged[name]; have != nil {
			require.Equal(t, have.GetType(), mf.GetType(), name)
			have.Metric = append(have.Metric, mf.Metric...)
		} else {
			merged[name] = mf
		}
	}
	return merged
}

// readTextfile parses a node-exporter textfile.
func readTextfile(t testing.TB, path string) exported {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(f)
	require.NoError(t, err, "parse %s", path)
	return exported(fams)
}

// s3Server is a versitygw process serving one bucket.
type s3Server struct {
	endpoint, access, secret, bucket, dataDir string
}

func (s s3Server) options() map[string]string {
	return map[string]string{
		"aws_endpoint":          s.endpoint,
		"aws_access_key_id":     s.access,
		"aws_secret_access_key": s.secret,
		"aws_region":            "us-east-1",
		"allow_http":            "true",
	}
}

func (s s3Server) flags() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.options())) {
		out = append(out, "--storage-option", k+"="+s.options()[k])
	}
	return out
}

func (s s3Server) yamlOptions(indent string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.options())) {
		fmt.Fprintf(&b, "%s%s: %q\n", indent, k, s.options()[k])
	}
	return strings.TrimRight(b.String(), "\n")
}

// startVersityGW starts the versitygw S3 server that `make tools` installs
// (REAPER_VERSITYGW, <repo>/.tools/bin/versitygw or PATH) on a free loopback
// port, with one empty bucket; it stops with the test.
func startVersityGW(t testing.TB, dataDir string) s3Server {
	bin := os.Getenv("REAPER_VERSITYGW")
	if bin == "" {
		bin = filepath.Join(repoDir(t), ".tools", "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			if p, err := exec.LookPath("versitygw"); err == nil {
				bin = p
			}
		}
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "versitygw not found: run `make tools` (make deploy-check does) or set REAPER_VERSITYGW")

	key := make([]byte, 16)
	_, _ = rand.Read(key)
	s := s3Server{
		access:  "deploy-" + hex.EncodeToString(key[:4]),
		secret:  hex.EncodeToString(key),
		bucket:  "reaper-deploy-check",
		dataDir: dataDir,
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dataDir, s.bucket), 0o755))
	for attempt := 0; ; attempt++ { // the free port can be taken before versitygw binds it
		addr := freeAddr(t)
		s.endpoint = "http://" + addr
		out := &lockedBuffer{}
		cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", dataDir)
		cmd.Env = append(baseEnv(t), "ROOT_ACCESS_KEY="+s.access, "ROOT_SECRET_KEY="+s.secret)
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		if waitListening(addr, exited, 15*time.Second) {
			break
		}
		require.Less(t, attempt, 2, "versitygw did not start on %s: %s", addr, out.String())
	}
	return s
}

// waitListening waits until something accepts connections on addr.
func waitListening(addr string, exited <-chan struct{}, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// TestRealPassMetrics checks the pass the other tests read: every reaper_*
// family is documented and carries the series this pass must have left.
func TestRealPassMetrics(t *testing.T) {
	realMetrics(t)
	e := firstPass
	names := e.reaperNames()
	t.Logf("reaper exports %d families after a real pass:\n  %s", len(names), strings.Join(names, "\n  "))
	require.GreaterOrEqual(t, len(names), 16)
	for _, n := range names {
		require.NotEmpty(t, e[n].GetHelp(), "%s has no HELP text", n)
	}
	value := func(family string, labels map[string]string) float64 {
		t.Helper()
		mf := e[family]
		require.NotNil(t, mf, "%s missing from the pass's textfile", family)
		for _, m := range mf.GetMetric() {
			match := true
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == k && lp.GetValue() == v)
				}
				match = match && found
			}
			if match {
				switch mf.GetType() {
				case dto.MetricType_COUNTER:
					return m.GetCounter().GetValue()
				case dto.MetricType_GAUGE:
					return m.GetGauge().GetValue()
				case dto.MetricType_HISTOGRAM:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		require.Failf(t, "no series", "%s%v", family, labels)
		return 0
	}
	// The crowded root was refused: not a success, and no last success.
	require.Equal(t, 1.0, value("reaper_passes_total", map[string]string{"result": "refused"}))
	require.Equal(t, 0.0, value("reaper_passes_total", map[string]string{"result": "success"}))
	require.Equal(t, 2.0, value("reaper_tables_purged_total", nil))
	require.Equal(t, 1.0, value("reaper_roots_refused_total", map[string]string{"reason": "blast_radius"}))
	require.Equal(t, 1.0, value("reaper_skipped_total", map[string]string{"reason": "not_due"}))
	require.Greater(t, value("reaper_bytes_reclaimed_total", nil), 0.0)
	require.Greater(t, value("reaper_s3_http_requests_total", map[string]string{"operation": "DeleteObjects", "code": "200"}), 0.0)
	require.Equal(t, 0.0, value("reaper_last_success_timestamp_seconds", nil))
	require.Equal(t, 1.0, value("reaper_pass_duration_seconds", nil))
	// Retention planned every live table of the local root, none of which
	// it may clean: the backlog is set, at zero.
	require.Equal(t, 1.0, value("reaper_retention_tables_total", map[string]string{"result": "unsupported"}), "users")
	require.Equal(t, 0.0, value("reaper_retention_reclaimable_bytes", nil))
}
