package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The tests here run the reaper container of each built pod template as a
// local process: the image's binary (make build), the container's args and
// env, and its volumes as directories — the ConfigMap's files, emptyDirs,
// and the persistent volumes seeded with tables. Container paths in args,
// env and the mounted configuration are rewritten to those directories,
// the way the pod's mount namespace would see them.

// sandbox is one container's volumes on the local disk.
type sandbox struct {
	t      *testing.T
	p      podTemplate
	c      *corev1.Container
	mounts map[string]string // mountPath -> directory
	order  []string          // mountPaths, longest first
}

func newSandbox(t *testing.T, p podTemplate, c *corev1.Container) *sandbox {
	t.Helper()
	root := t.TempDir()
	s := &sandbox{t: t, p: p, c: c, mounts: map[string]string{}}
	for _, m := range c.VolumeMounts {
		s.mounts[m.MountPath] = filepath.Join(root, "volumes", m.Name)
		s.order = append(s.order, m.MountPath)
	}
	slices.SortFunc(s.order, func(a, b string) int { return len(b) - len(a) })
	for _, m := range c.VolumeMounts {
		dir := s.mounts[m.MountPath]
		require.NoError(t, os.MkdirAll(dir, 0o755))
		v := p.volume(m.Name)
		if v.ConfigMap == nil {
			continue
		}
		o, ok := p.build.find("ConfigMap", v.ConfigMap.Name)
		require.True(t, ok, "%s: ConfigMap %s", p, v.ConfigMap.Name)
		for k, data := range o.obj.(*corev1.ConfigMap).Data {
			require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(s.remap(data)), 0o644))
		}
	}
	return s
}

func isPathChar(b byte) bool {
	return b == '/' || b == '.' || b == '_' || b == '-' ||
		('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9')
}

// remap rewrites every container path under a mount to its directory.
func (s *sandbox) remap(in string) string {
	var out strings.Builder
	for i := 0; i < len(in); {
		matched := false
		if i == 0 || !isPathChar(in[i-1]) {
			for _, mp := range s.order {
				end := i + len(mp)
				if strings.HasPrefix(in[i:], mp) && (end == len(in) || in[end] == '/' || !isPathChar(in[end])) {
					out.WriteString(s.mounts[mp])
					i, matched = end, true
					break
				}
			}
		}
		if !matched {
			out.WriteByte(in[i])
			i++
		}
	}
	return out.String()
}

// dir is the directory behind a container path.
func (s *sandbox) dir(containerPath string) string {
	d := s.remap(containerPath)
	require.NotEqual(s.t, containerPath, d, "%s: nothing is mounted at %s", s.p, containerPath)
	return d
}

// podNamespace is the namespace the sandboxed pods run in.
const podNamespace = "lance"

// env is the container's environment as Kubernetes would set it.
func (s *sandbox) env(overrides map[string]string) []string {
	var env []string
	for _, e := range s.c.Env {
		if v, ok := overrides[e.Name]; ok {
			env = append(env, e.Name+"="+v)
			continue
		}
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+s.remap(e.Value))
		case e.ValueFrom.ResourceFieldRef != nil:
			ref := e.ValueFrom.ResourceFieldRef
			require.Equal(s.t, s.c.Name, ref.ContainerName, "%s: %s", s.p, e.Name)
			require.Equal(s.t, "limits.memory", ref.Resource, "%s: %s", s.p, e.Name)
			env = append(env, e.Name+"="+strconv.FormatInt(s.c.Resources.Limits.Memory().Value(), 10))
		case e.ValueFrom.FieldRef != nil:
			require.Equal(s.t, "metadata.namespace", e.ValueFrom.FieldRef.FieldPath, "%s: %s", s.p, e.Name)
			env = append(env, e.Name+"="+podNamespace)
		default:
			require.Failf(s.t, "unsupported env source", "%s: %s", s.p, e.Name)
		}
	}
	for k, v := range overrides {
		if !slices.ContainsFunc(s.c.Env, func(e corev1.EnvVar) bool { return e.Name == k }) {
			env = append(env, k+"="+v)
		}
	}
	// os.TempDir inside the container is /tmp, the emptyDir.
	return append(env, "TMPDIR="+s.dir("/tmp"))
}

// args are the container's args, paths rewritten, with replace applied to
// flags given as --name=value.
func (s *sandbox) args(replace map[string]string) []string {
	var out []string
	for _, a := range s.c.Args {
		name, _, ok := strings.Cut(a, "=")
		if v, r := replace[name]; ok && r {
			a = name + "=" + v
		}
		out = append(out, s.remap(a))
	}
	return out
}

// passResult reads the "pass finished" log line's result from JSON logs.
func passResults(t *testing.T, stderr string) []string {
	t.Helper()
	var results []string
	for _, line := range strings.Split(stderr, "\n") {
		var l struct {
			Msg    string `json:"msg"`
			Result string `json:"result"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "pass finished" {
			results = append(results, l.Result)
		}
	}
	return results
}

// pushgateway records what reaper pushes.
type pushgateway struct {
	*httptest.Server
	mu     sync.Mutex
	pushes map[string]exported // by path
}

func newPushgateway(t *testing.T) *pushgateway {
	pg := &pushgateway{pushes: map[string]exported{}}
	pg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams := exported{}
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if err != io.EOF {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				break
			}
			fams[mf.GetName()] = mf
		}
		pg.mu.Lock()
		pg.pushes[r.Method+" "+r.URL.Path] = fams
		pg.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(pg.Close)
	return pg
}

// allowShortTTL is safety.allow_short_ttl's variable: the pods' tests set it
// to purge the tables writeDueTable drops with a TTL below safety.min_ttl.
const allowShortTTL = "REAPER_SAFETY_ALLOW_SHORT_TTL"

// TestCronJobPodsPass runs the CronJobs' pods: each pass succeeds (not
// partial: every root and discover parent in the mounted configuration is
// there), purges the due tables, keeps the live ones, and the Pushgateway
// gets the run's metrics. The sharded example's pods split the roots: each
// table is purged by exactly one index.
func TestCronJobPodsPass(t *testing.T) {
	for _, dir := range []string{"kubernetes/cronjob", "kubernetes/examples/s3-irsa", "kubernetes/examples/gcs-workload-identity", "kubernetes/examples/sharded", "kubernetes/examples/retention"} {
		t.Run(dir, func(t *testing.T) {
			p := cronJobOf(t, dir)
			c := p.reaperContainers()[0]
			s := newSandbox(t, p, c)
			// The due tables have a TTL below safety.min_ttl (see
			// writeDueTable): allow it for this run, as an operator would
			// set one variable on the pod.
			overrides := map[string]string{allowShortTTL: "true"}

			// The databases: the configured root, or REAPER_ROOTS' roots.
			roots := []string{"/var/lib/lancedb"}
			if v, ok := envValue(c, "REAPER_ROOTS"); ok {
				roots = strings.Split(v, ",")
			}
			var hostRoots []string
			for i, r := range roots {
				if strings.HasPrefix(r, "s3://") || strings.HasPrefix(r, "gs://") {
					// S3 itself is exercised by the metrics pass (versitygw),
					// GCS by the repository's tests (fake-gcs-server); here a
					// local directory stands in for the bucket.
					r = filepath.Join(t.TempDir(), fmt.Sprintf("s3-%d", i))
					require.NoError(t, os.MkdirAll(r, 0o755))
					overrides["REAPER_ROOTS"] = strings.Join(append(hostRoots, r), ",")
				} else {
					r = s.dir(r)
				}
				hostRoots = append(hostRoots, r)
			}
			type table struct{ dir, name string }
			var due []table
			for i, r := range hostRoots {
				writeTable(t, r, "live", time.Now().Add(-time.Hour))
				name := fmt.Sprintf("dropped%d", i)
				writeDueTable(t, r, name)
				due = append(due, table{r, name})
			}
			if p.job.CompletionMode != nil {
				// Tenants under the discover parent, one database each.
				for i := range 12 {
					tenant := filepath.Join(s.dir("/var/lib/lancedb-tenants"), fmt.Sprintf("tenant-%02d", i))
					writeTable(t, tenant, "live", time.Now().Add(-time.Hour))
					writeDueTable(t, tenant, "dropped")
					due = append(due, table{tenant, "dropped"})
				}
			}
			for _, tb := range due {
				waitDue(t, tb.dir, nil, tb.name)
			}

			var pg *pushgateway
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--pushgateway=") {
					pg = newPushgateway(t)
				}
			}
			var replace map[string]string
			if pg != nil {
				replace = map[string]string{"--pushgateway": pg.URL}
			}

			indexes := []int{-1}
			if p.job.CompletionMode != nil {
				indexes = nil
				for i := range int(*p.job.Completions) {
					indexes = append(indexes, i)
				}
			}
			purgedBy := map[table]int{}
			for _, idx := range indexes {
				env := maps.Clone(overrides)
				if idx >= 0 {
					env["JOB_COMPLETION_INDEX"] = strconv.Itoa(idx) // set by Kubernetes for Indexed Jobs
				}
				r := runReaper(t, s.env(env), s.args(replace)...)
				require.Equal(t, 0, r.code, "%s index %d: %s", p, idx, r)
				require.Equal(t, []string{"success"}, passResults(t, r.stderr), "%s index %d: %s", p, idx, r)
				if _, on := envValue(c, "REAPER_RETENTION_ENABLED"); on {
					// Retention visited the live table (reaper's placeholder
					// tables are unsupported: nothing of them is deleted).
					require.Contains(t, r.stderr, `"msg":"table retention"`, "%s: %s", p, r)
					require.Contains(t, r.stderr, `"reason":"unsupported"`, "%s: %s", p, r)
				}
				for _, tb := range due {
					if _, done := purgedBy[tb]; !done && !tableExists(t, tb.dir, tb.name) {
						purgedBy[tb] = idx
					}
				}
			}
			for _, tb := range due {
				_, ok := purgedBy[tb]
				require.True(t, ok, "%s: %s/%s was not purged", p, tb.dir, tb.name)
			}
			for _, r := range hostRoots {
				require.True(t, tableExists(t, r, "live"), "%s: a live table was purged", p)
			}
			if len(indexes) > 1 {
				shards := map[int]bool{}
				for _, idx := range purgedBy {
					shards[idx] = true
				}
				require.Greater(t, len(shards), 1, "%s: one pod purged every root: %v", p, purgedBy)
			}
			if pg != nil {
				pg.mu.Lock()
				defer pg.mu.Unlock()
				// One group per job and namespace (per shard when sharded),
				// whatever the pod's name: each run replaces the previous run's.
				var want []string
				for _, idx := range indexes {
					if idx < 0 {
						want = append(want, "PUT /metrics/job/reaper/namespace/"+podNamespace)
					} else {
						want = append(want, fmt.Sprintf("PUT /metrics/job/reaper/namespace/%s/shard/%d", podNamespace, idx))
					}
				}
				require.ElementsMatch(t, want, slices.Collect(maps.Keys(pg.pushes)))
				for _, fams := range pg.pushes {
					require.NotNil(t, fams["reaper_passes_total"])
					require.NotNil(t, fams["reaper_last_success_timestamp_seconds"])
				}
			}
		})
	}
}

// TestDeploymentPodsServe runs the daemon's and the sidecar's reaper
// containers: the probes' paths answer on the probes' port, the first pass
// purges the due table and shows on /metrics, and SIGTERM ends the process
// cleanly within the pod's grace period.
func TestDeploymentPodsServe(t *testing.T) {
	for _, dir := range []string{"kubernetes/daemon", "kubernetes/examples/sidecar", "kubernetes/examples/retention-daemon"} {
		t.Run(dir, func(t *testing.T) {
			p := podTemplatesOf(t, dir, "Deployment")
			c := p.reaperContainers()[0]
			s := newSandbox(t, p, c)
			root := "/var/lib/lancedb"
			if v, ok := envValue(c, "REAPER_ROOTS"); ok {
				root = v
			}
			db := s.dir(root)
			writeTable(t, db, "live", time.Now().Add(-time.Hour))
			writeDueTable(t, db, "dropped")
			waitDue(t, db, nil, "dropped")

			// The probes' port is listen's; a free one stands in for :9090.
			addr := freeAddr(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, reaperBin(t), s.args(nil)...)
			// The due table's TTL is below safety.min_ttl (writeDueTable).
			cmd.Env = append(baseEnv(t), s.env(map[string]string{"REAPER_LISTEN": addr, allowShortTTL: "true"})...)
			var stdout, stderr lockedBuffer // written by the process while the test reads
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			defer func() {
				_ = cmd.Process.Kill()
				<-exited
			}()

			waitHTTP(t, "http://"+addr+c.LivenessProbe.HTTPGet.Path, 10*time.Second, exited)
			if c.ReadinessProbe != nil {
				waitHTTP(t, "http://"+addr+c.ReadinessProbe.HTTPGet.Path, 10*time.Second, exited)
			}
			deadline := time.Now().Add(15 * time.Second)
			for tableExists(t, db, "dropped") && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			require.False(t, tableExists(t, db, "dropped"), "the first pass did not purge the due table; logs:\n%s", stderr.String())
			require.True(t, tableExists(t, db, "live"))

			// The pass shows on /metrics once it has finished.
			var success float64
			for time.Now().Before(deadline) && success == 0 {
				resp, err := http.Get("http://" + addr + "/metrics")
				require.NoError(t, err)
				parser := expfmt.NewTextParser(model.UTF8Validation)
				fams, err := parser.TextToMetricFamilies(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				for _, m := range fams["reaper_passes_total"].GetMetric() {
					for _, lp := range m.GetLabel() {
						if lp.GetName() == "result" && lp.GetValue() == "success" {
							success = m.GetCounter().GetValue()
						}
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			require.Equal(t, 1.0, success, "reaper_passes_total{result=\"success\"}; logs:\n%s", stderr.String())

			start := time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			grace := time.Duration(*p.spec.Spec.TerminationGracePeriodSeconds) * time.Second
			select {
			case <-exited:
			case <-time.After(grace):
				require.FailNow(t, "reaper run outlived the pod's grace period after SIGTERM")
			}
			require.NoError(t, waitErr, "exit after SIGTERM; logs:\n%s", stderr.String())
			t.Logf("%s: stopped %s after SIGTERM", p, time.Since(start).Round(time.Millisecond))
		})
	}
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServiceLinksDoNotBreakReaper: Kubernetes gives every pod
// <SERVICE>_SERVICE_HOST, <SERVICE>_PORT and the like for each Service in its
// namespace, unless enableServiceLinks is false. For the Service named
// reaper these are REAPER_* variables; reaper must not take them for
// misspelt settings (it once did, and the pods would not start). The pods
// still turn service links off (TestPodsAreLockedDown).
func TestServiceLinksDoNotBreakReaper(t *testing.T) {
	var linked []string
	for _, b := range allBuilds(t) {
		for _, o := range b.all("Service") {
			svc := o.obj.(*corev1.Service)
			prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
			vars := []string{prefix + "_SERVICE_HOST=10.96.0.10", prefix + "_PORT=tcp://10.96.0.10:9090"}
			for _, port := range svc.Spec.Ports {
				vars = append(vars, fmt.Sprintf("%s_SERVICE_PORT_%s=%d", prefix, strings.ToUpper(strings.ReplaceAll(port.Name, "-", "_")), port.Port))
			}
			for _, v := range vars {
				if strings.HasPrefix(v, "REAPER_") && !slices.Contains(linked, v) {
					linked = append(linked, v)
				}
			}
		}
	}
	require.NotEmpty(t, linked, "the daemon's Service is named reaper")
	root := t.TempDir()
	ok := runReaper(t, nil, "purge", "--root", root, "--dry-run")
	require.Equal(t, 0, ok.code, ok.String())
	for _, v := range linked {
		r := runReaper(t, []string{v}, "purge", "--root", root, "--dry-run")
		require.Equal(t, 0, r.code, "%s: %s", v, r)
	}
}
