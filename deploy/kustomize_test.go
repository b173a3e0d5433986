package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// reaperImage is the image every reaper container names: a placeholder a
// user's overlay replaces with the image they built (make image), through
// kustomize's images transformer; unset, it never resolves (imageref_test.go).
const reaperImage = "set-image-in-overlay.invalid/reaper"

// configFile is where the pods mount the configuration.
const configFile = "/etc/reaper/reaper.yaml"

// object is one Kubernetes object, decoded strictly into its Go type.
type object struct {
	kind, name string
	yaml       []byte
	obj        any
}

// decodeStrict decodes a manifest into the Go type of its apiVersion and
// kind; unknown fields, duplicate keys and unknown kinds are errors.
func decodeStrict(data []byte) (object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return object{}, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "batch/v1 CronJob":
		obj = &batchv1.CronJob{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	default:
		return object{}, fmt.Errorf("%s %q: no Go type to check it against (apiVersion %q)", tm.Kind, tm.Metadata.Name, tm.APIVersion)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return object{}, fmt.Errorf("%s %q: %w", tm.Kind, tm.Metadata.Name, err)
	}
	if tm.Metadata.Name == "" {
		return object{}, fmt.Errorf("%s without metadata.name", tm.Kind)
	}
	return object{kind: tm.Kind, name: tm.Metadata.Name, yaml: data, obj: obj}, nil
}

// build is the output of one kustomization.
type build struct {
	dir     string // relative to deploy/, slash-separated
	objects []object
}

func (b *build) find(kind, name string) (object, bool) {
	for _, o := range b.objects {
		if o.kind == kind && o.name == name {
			return o, true
		}
	}
	return object{}, false
}

func (b *build) all(kind string) []object {
	var out []object
	for _, o := range b.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

var (
	buildsOnce sync.Once
	builds     []*build
	buildsErr  error
)

// kustomizations lists every directory under deploy/ with a kustomization.yaml.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	require.NoError(t, filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.ToSlash(filepath.Dir(p)))
		}
		return nil
	}))
	slices.Sort(dirs)
	return dirs
}

// allBuilds runs kustomize (the library kubectl -k embeds, with its default
// options: files outside a kustomization's root are refused) on every
// kustomization and decodes every object it emits.
func allBuilds(t *testing.T) []*build {
	t.Helper()
	buildsOnce.Do(func() {
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		for _, dir := range kustomizations(t) {
			m, err := k.Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				buildsErr = fmt.Errorf("kustomize build %s: %w", dir, err)
				return
			}
			b := &build{dir: dir}
			for _, r := range m.Resources() {
				data, err := r.AsYAML()
				if err != nil {
					buildsErr = fmt.Errorf("kustomize build %s: %w", dir, err)
					return
				}
				o, err := decodeStrict(data)
				if err != nil {
					buildsErr = fmt.Errorf("kustomize build %s: %w", dir, err)
					return
				}
				b.objects = append(b.objects, o)
			}
			builds = append(builds, b)
		}
	})
	require.NoError(t, buildsErr)
	return builds
}

func buildOf(t *testing.T, dir string) *build {
	t.Helper()
	for _, b := range allBuilds(t) {
		if b.dir == dir {
			return b
		}
	}
	require.FailNow(t, "no kustomization "+dir)
	return nil
}

func TestKustomizationsBuild(t *testing.T) {
	want := []string{
		"grafana",
		"kubernetes/base",
		"kubernetes/cronjob",
		"kubernetes/daemon",
		"kubernetes/examples/azure-workload-identity",
		"kubernetes/examples/gcs-workload-identity",
		"kubernetes/examples/retention",
		"kubernetes/examples/retention-daemon",
		"kubernetes/examples/s3-irsa",
		"kubernetes/examples/s3-static-keys",
		"kubernetes/examples/sharded",
		"kubernetes/examples/sidecar",
		"prometheus",
	}
	require.Equal(t, want, kustomizations(t))
	kinds := map[string][]string{}
	for _, b := range allBuilds(t) {
		require.NotEmpty(t, b.objects, b.dir)
		for _, o := range b.objects {
			kinds[b.dir] = append(kinds[b.dir], o.kind+"/"+o.name)
		}
	}
	t.Logf("built: %v", kinds)
	require.Len(t, buildOf(t, "kubernetes/cronjob").all("CronJob"), 1)
	require.Len(t, buildOf(t, "kubernetes/daemon").all("Deployment"), 1)
	require.Len(t, buildOf(t, "kubernetes/daemon").all("ServiceMonitor"), 1)
	require.Len(t, buildOf(t, "kubernetes/examples/sidecar").all("Deployment"), 1)
	require.Len(t, buildOf(t, "prometheus").all("PrometheusRule"), 1)
}

// TestManifestFilesDecodeStrictly decodes every file a kustomization lists
// as a resource or a patch on its own, and refuses YAML files no
// kustomization uses.
func TestManifestFilesDecodeStrictly(t *testing.T) {
	used := map[string]string{}
	for _, dir := range kustomizations(t) {
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		require.NoError(t, err)
		var k types.Kustomization
		require.NoError(t, yaml.UnmarshalStrict(data, &k), "%s/kustomization.yaml", dir)
		used[filepath.Join(dir, "kustomization.yaml")] = "kustomization"
		for _, r := range k.Resources {
			p := filepath.Join(dir, r)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				used[p] = "resource"
			}
		}
		for _, p := range k.Patches {
			if p.Path != "" {
				used[filepath.Join(dir, p.Path)] = "patch"
			}
		}
		for _, g := range k.ConfigMapGenerator {
			for _, f := range g.FileSources {
				_, src, ok := strings.Cut(f, "=")
				if !ok {
					src = f
				}
				used[filepath.Join(dir, src)] = "generator"
			}
		}
	}
	// Not a manifest: the Prometheus rule file generated from the
	// PrometheusRule (rules_test.go checks it).
	used[plainRuleFile] = "rule file"
	require.NoError(t, filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		role, ok := used[p]
		require.True(t, ok, "%s is not used by any kustomization", p)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch role {
		case "resource":
			for _, doc := range bytes.Split(data, []byte("\n---\n")) {
				_, err := decodeStrict(doc)
				require.NoError(t, err, p)
			}
		case "patch":
			// A strategic-merge patch is a partial object with directives
			// ($patch); check it parses and names its target.
			var m map[string]any
			require.NoError(t, yaml.UnmarshalStrict(data, &m), p)
			require.NotEmpty(t, m["kind"], "%s: a patch names its kind", p)
		}
		return nil
	}))
}

// TestConfigMapIsConfigReaperYAML: the ConfigMap the pods mount is
// config/reaper.yaml, byte for byte (kustomize cannot read files outside a
// kustomization's root, so base/ holds a copy).
func TestConfigMapIsConfigReaperYAML(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(repoDir(t), "config", "reaper.yaml"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("kubernetes", "base", "reaper.yaml"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got),
		"deploy/kubernetes/base/reaper.yaml differs from config/reaper.yaml: cp config/reaper.yaml deploy/kubernetes/base/reaper.yaml")
	for _, b := range allBuilds(t) {
		want := want
		if own, ok := ownConfig[b.dir]; ok {
			want, err = os.ReadFile(filepath.Join(b.dir, own))
			require.NoError(t, err)
		}
		for _, o := range b.all("ConfigMap") {
			cm := o.obj.(*corev1.ConfigMap)
			if !strings.HasPrefix(cm.Name, "reaper-config-") {
				continue
			}
			require.Equal(t, string(want), cm.Data["reaper.yaml"], "%s: ConfigMap %s", b.dir, cm.Name)
		}
	}
}

// ownConfig are the examples whose reaper.yaml replaces config/reaper.yaml
// (configMapGenerator behavior: replace), by directory.
var ownConfig = map[string]string{"kubernetes/examples/s3-static-keys": "reaper.yaml"}

// podTemplate is a pod template found in a build, with what owns it.
type podTemplate struct {
	build *build
	owner string // Kind/name
	spec  *corev1.PodTemplateSpec
	job   *batchv1.JobSpec       // CronJob and Job
	cron  *batchv1.CronJobSpec   // CronJob
	dep   *appsv1.DeploymentSpec // Deployment
}

func podTemplates(t *testing.T) []podTemplate {
	t.Helper()
	var out []podTemplate
	for _, b := range allBuilds(t) {
		out = append(out, podTemplatesIn(b)...)
	}
	return out
}

// podTemplatesIn are the pod templates of one build's workloads.
func podTemplatesIn(b *build) []podTemplate {
	var out []podTemplate
	for _, o := range b.objects {
		switch v := o.obj.(type) {
		case *batchv1.CronJob:
			out = append(out, podTemplate{build: b, owner: o.kind + "/" + o.name, spec: &v.Spec.JobTemplate.Spec.Template,
				job: &v.Spec.JobTemplate.Spec, cron: &v.Spec})
		case *batchv1.Job:
			out = append(out, podTemplate{build: b, owner: o.kind + "/" + o.name, spec: &v.Spec.Template, job: &v.Spec})
		case *appsv1.Deployment:
			out = append(out, podTemplate{build: b, owner: o.kind + "/" + o.name, spec: &v.Spec.Template, dep: &v.Spec})
		}
	}
	return out
}

func (p podTemplate) String() string { return p.build.dir + ": " + p.owner }

// reaperContainers are the containers running the reaper image.
func (p podTemplate) reaperContainers() []*corev1.Container {
	var out []*corev1.Container
	for i := range p.spec.Spec.Containers {
		c := &p.spec.Spec.Containers[i]
		if strings.HasPrefix(c.Image, reaperImage+":") || c.Image == reaperImage {
			out = append(out, c)
		}
	}
	return out
}

func (p podTemplate) volume(name string) *corev1.Volume {
	for i := range p.spec.Spec.Volumes {
		if p.spec.Spec.Volumes[i].Name == name {
			return &p.spec.Spec.Volumes[i]
		}
	}
	return nil
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// reaperConfig is the configuration the pods mount, read as YAML.
type reaperConfig struct {
	Schedule      string `json:"schedule"`
	Listen        string `json:"listen"`
	ShutdownGrace string `json:"shutdown_grace"`
}

func loadReaperConfig(t *testing.T) reaperConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("kubernetes", "base", "reaper.yaml"))
	require.NoError(t, err)
	var c reaperConfig
	require.NoError(t, yaml.Unmarshal(data, &c))
	require.NotEmpty(t, c.Schedule)
	require.NotEmpty(t, c.Listen)
	require.NotEmpty(t, c.ShutdownGrace)
	return c
}

// parseDuration reads reaper's durations: Go durations plus a day suffix.
func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	var days time.Duration
	if d, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(d)
		require.NoError(t, err, "duration %q", s)
		days, s = time.Duration(n)*24*time.Hour, rest
		if s == "" {
			return days
		}
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, "duration %q", s)
	return days + d
}

// schedulePeriod is the interval of a cron spec or descriptor that fires
// at a fixed rate ("*/10 * * * *", "@every 10m").
func schedulePeriod(t *testing.T, spec string) time.Duration {
	t.Helper()
	s, err := cron.ParseStandard(spec)
	require.NoError(t, err, "schedule %q", spec)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a := s.Next(t0)
	b := s.Next(a)
	c := s.Next(b)
	require.Equal(t, b.Sub(a), c.Sub(b), "schedule %q does not fire at a fixed rate", spec)
	return b.Sub(a)
}

// TestPodsAreLockedDown checks every pod that runs reaper: non-root,
// read-only root filesystem with a writable /tmp, no privilege escalation,
// no capabilities, bounded memory, the mounted configuration, no service
// links (see TestServiceLinksBreakReaper), and the command it runs.
func TestPodsAreLockedDown(t *testing.T) {
	cfg := loadReaperConfig(t)
	grace := parseDuration(t, cfg.ShutdownGrace)
	found := 0
	for _, p := range podTemplates(t) {
		cs := p.reaperContainers()
		require.NotEmpty(t, cs, "%s runs no reaper container", p)
		pod := p.spec.Spec
		require.NotNil(t, pod.EnableServiceLinks, "%s: set enableServiceLinks: false", p)
		require.False(t, *pod.EnableServiceLinks, "%s: enableServiceLinks", p)
		require.Equal(t, "reaper", pod.ServiceAccountName, p.String())
		require.NotNil(t, pod.SecurityContext, p.String())
		require.NotNil(t, pod.SecurityContext.SeccompProfile, p.String())
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type, p.String())
		require.NotNil(t, pod.TerminationGracePeriodSeconds, p.String())
		require.Greater(t, time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, grace,
			"%s: terminationGracePeriodSeconds must exceed shutdown_grace (%s)", p, grace)
		for _, c := range cs {
			found++
			what := fmt.Sprintf("%s container %s", p, c.Name)
			sc := c.SecurityContext
			require.NotNil(t, sc, what)
			nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) ||
				(pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot)
			require.True(t, nonRoot, "%s: runAsNonRoot", what)
			require.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", what)
			require.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation", what)
			require.NotNil(t, sc.Capabilities, what)
			require.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), "%s: drop ALL capabilities", what)
			require.Empty(t, sc.Capabilities.Add, what)
			require.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: cpu request", what)
			require.False(t, c.Resources.Requests.Memory().IsZero(), "%s: memory request", what)
			require.False(t, c.Resources.Limits.Memory().IsZero(), "%s: memory limit", what)

			require.NotEmpty(t, c.Args, what)
			require.Contains(t, []string{"purge", "run"}, c.Args[0], "%s: runs %v", what, c.Args)
			require.Equal(t, []string{"--config", configFile}, c.Args[1:3], "%s: %v", what, c.Args)
			if p.job != nil {
				require.Equal(t, "purge", c.Args[0], "%s: a Job runs one pass", what)
			} else {
				require.Equal(t, "run", c.Args[0], "%s: a Deployment runs the daemon", what)
			}
			for _, e := range c.Env {
				require.NotEqual(t, "REAPER_LISTEN", e.Name, "%s: the ports and probes assume listen from reaper.yaml", what)
			}

			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = m
				require.NotNil(t, p.volume(m.Name), "%s: mount of unknown volume %s", what, m.Name)
			}
			// The configuration: the generated ConfigMap, with its hash suffix.
			cm, ok := mounts[filepath.Dir(configFile)]
			require.True(t, ok, "%s: mounts nothing at %s", what, filepath.Dir(configFile))
			require.True(t, cm.ReadOnly, "%s: config mount", what)
			v := p.volume(cm.Name)
			require.NotNil(t, v.ConfigMap, "%s: %s is no ConfigMap", what, cm.Name)
			obj, ok := p.build.find("ConfigMap", v.ConfigMap.Name)
			require.True(t, ok, "%s: ConfigMap %s is not in the build (kustomize names it reaper-config-<hash>)", what, v.ConfigMap.Name)
			require.Contains(t, obj.obj.(*corev1.ConfigMap).Data, filepath.Base(configFile), what)
			// A writable /tmp: purges of big tables spill their key lists there.
			tmp, ok := mounts["/tmp"]
			require.True(t, ok, "%s: no /tmp mount under a read-only root filesystem", what)
			require.False(t, tmp.ReadOnly, what)
			require.NotNil(t, p.volume(tmp.Name).EmptyDir, "%s: /tmp should be an emptyDir", what)
		}
		if p.job != nil {
			require.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy, p.String())
			require.NotNil(t, p.job.ActiveDeadlineSeconds, "%s: activeDeadlineSeconds", p)
			require.True(t, p.job.BackoffLimit != nil || p.job.BackoffLimitPerIndex != nil, "%s: backoffLimit", p)
		}
	}
	require.GreaterOrEqual(t, found, 5)
}

// TestCronJobsFollowTheSchedule: a CronJob fires as often as reaper.yaml's
// schedule, never overlaps, never queues, and each Job ends before the next
// one is due, so concurrencyPolicy Forbid never skips a run.
func TestCronJobsFollowTheSchedule(t *testing.T) {
	period := schedulePeriod(t, loadReaperConfig(t).Schedule)
	n := 0
	for _, p := range podTemplates(t) {
		if p.cron == nil {
			continue
		}
		n++
		require.Equal(t, period, schedulePeriod(t, p.cron.Schedule), "%s: schedule %q vs reaper.yaml's", p, p.cron.Schedule)
		require.Equal(t, batchv1.ForbidConcurrent, p.cron.ConcurrencyPolicy, p.String())
		require.NotNil(t, p.cron.StartingDeadlineSeconds, "%s: startingDeadlineSeconds", p)
		require.LessOrEqual(t, time.Duration(*p.cron.StartingDeadlineSeconds)*time.Second, period, p.String())
		require.Less(t, time.Duration(*p.job.ActiveDeadlineSeconds)*time.Second, period,
			"%s: activeDeadlineSeconds must end a Job before the next is due", p)
		require.NotNil(t, p.job.PodFailurePolicy, "%s: podFailurePolicy", p)
		exit2 := false
		for _, r := range p.job.PodFailurePolicy.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil {
				exit2 = exit2 || slices.Contains(r.OnExitCodes.Values, 2)
			}
		}
		require.True(t, exit2, "%s: exit status 2 (configuration error) must not be retried", p)
	}
	require.Equal(t, 7, n) // cronjob, s3-irsa, s3-static-keys, gcs-workload-identity, azure-workload-identity, sharded, retention
}

// TestDaemonProbesAndScraping: the daemon and the sidecar listen where
// reaper.yaml says, probe /healthz (and /readyz) there, and a Service and a
// ServiceMonitor lead Prometheus to that port.
func TestDaemonProbesAndScraping(t *testing.T) {
	_, port, ok := strings.Cut(loadReaperConfig(t).Listen, ":")
	require.True(t, ok)
	listenPort, err := strconv.Atoi(port)
	require.NoError(t, err)
	n := 0
	for _, p := range podTemplates(t) {
		if p.dep == nil {
			continue
		}
		n++
		c := p.reaperContainers()[0]
		var cp *corev1.ContainerPort
		for i := range c.Ports {
			if c.Ports[i].Name == "http-metrics" {
				cp = &c.Ports[i]
			}
		}
		require.NotNil(t, cp, "%s: port http-metrics", p)
		require.Equal(t, int32(listenPort), cp.ContainerPort, "%s: containerPort vs listen %s", p, loadReaperConfig(t).Listen)
		require.NotNil(t, c.LivenessProbe, "%s: livenessProbe", p)
		require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, p.String())
		require.Equal(t, "http-metrics", c.LivenessProbe.HTTPGet.Port.String(), p.String())
		sidecar := len(p.spec.Spec.Containers) > 1
		if sidecar {
			require.Nil(t, c.ReadinessProbe, "%s: a sidecar's readiness would take the main container out of its Service", p)
		} else {
			require.NotNil(t, c.ReadinessProbe, "%s: readinessProbe", p)
			require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, p.String())
			require.Equal(t, "http-metrics", c.ReadinessProbe.HTTPGet.Port.String(), p.String())
		}

		// A Service selects the pods and exposes http-metrics.
		var svc *corev1.Service
		for _, o := range p.build.all("Service") {
			s := o.obj.(*corev1.Service)
			if selects(s.Spec.Selector, p.spec.Labels) {
				svc = s
			}
		}
		require.NotNil(t, svc, "%s: no Service selects the pods", p)
		var sp *corev1.ServicePort
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Name == "http-metrics" {
				sp = &svc.Spec.Ports[i]
			}
		}
		require.NotNil(t, sp, "%s: Service %s has no port http-metrics", p, svc.Name)
		require.Equal(t, int32(listenPort), sp.Port)
		require.Equal(t, "http-metrics", sp.TargetPort.String())

		// A ServiceMonitor selects the Service and scrapes that port.
		var sm *monitoringv1.ServiceMonitor
		for _, o := range p.build.all("ServiceMonitor") {
			m := o.obj.(*monitoringv1.ServiceMonitor)
			if selects(m.Spec.Selector.MatchLabels, svc.Labels) {
				sm = m
			}
		}
		require.NotNil(t, sm, "%s: no ServiceMonitor selects Service %s", p, svc.Name)
		require.Len(t, sm.Spec.Endpoints, 1)
		require.Equal(t, "http-metrics", sm.Spec.Endpoints[0].Port)
		require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	}
	require.Equal(t, 3, n) // daemon, sidecar, retention-daemon
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestShardedExample: an Indexed Job whose pod count is the shard count
// reaper reads (shard.count via REAPER_SHARD_COUNT; the index comes from
// JOB_COMPLETION_INDEX). TestShardedPassesSplitTheRoots runs it.
func TestShardedExample(t *testing.T) {
	p := cronJobOf(t, "kubernetes/examples/sharded")
	require.NotNil(t, p.job.CompletionMode)
	require.Equal(t, batchv1.IndexedCompletion, *p.job.CompletionMode)
	require.NotNil(t, p.job.Completions)
	require.NotNil(t, p.job.Parallelism)
	require.Equal(t, *p.job.Completions, *p.job.Parallelism)
	count, ok := envValue(p.reaperContainers()[0], "REAPER_SHARD_COUNT")
	require.True(t, ok, "REAPER_SHARD_COUNT")
	require.Equal(t, strconv.Itoa(int(*p.job.Completions)), count)
	require.Nil(t, p.job.BackoffLimit, "backoffLimit would cap the retries of all shards together; backoffLimitPerIndex is set")
	require.NotNil(t, p.job.BackoffLimitPerIndex)
	tenants := p.volume("tenants")
	require.NotNil(t, tenants.PersistentVolumeClaim, "the tenants' volume")
	require.Nil(t, tenants.EmptyDir)
}

// TestDiscoverOnlyWhereMeant: REAPER_DISCOVER is set by the sharded example
// alone, whose tenants' volume holds the discover parent; elsewhere a
// pattern over an empty directory only made the pods mount one for it (and
// a parent that does not exist makes every pass partial).
func TestDiscoverOnlyWhereMeant(t *testing.T) {
	for _, p := range podTemplates(t) {
		for _, c := range p.reaperContainers() {
			pattern, ok := envValue(c, "REAPER_DISCOVER")
			if p.build.dir != "kubernetes/examples/sharded" {
				require.False(t, ok, "%s: REAPER_DISCOVER=%s", p, pattern)
				require.Nil(t, p.volume("tenants"), "%s mounts a tenants' volume", p)
				continue
			}
			require.True(t, ok, "%s: REAPER_DISCOVER", p)
			parent := strings.TrimSuffix(pattern, "*/")
			var mounted *corev1.Volume
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(parent, strings.TrimSuffix(m.MountPath, "/")+"/") {
					mounted = p.volume(m.Name)
				}
			}
			require.NotNil(t, mounted, "%s: nothing is mounted at the discover parent %s", p, parent)
			require.NotNil(t, mounted.PersistentVolumeClaim, "%s: the discover parent is the tenants' volume", p)
		}
	}
}

// TestS3IRSAExample: IRSA annotation on the ServiceAccount the pods use, an
// S3 root, no local data volume, and a push to a Pushgateway under a fixed
// hostname (the Pushgateway groups by it).
func TestS3IRSAExample(t *testing.T) {
	b := buildOf(t, "kubernetes/examples/s3-irsa")
	o, ok := b.find("ServiceAccount", "reaper")
	require.True(t, ok)
	sa := o.obj.(*corev1.ServiceAccount)
	require.Regexp(t, `^arn:aws:iam::\d{12}:role/[\w+=,.@-]+$`, sa.Annotations["eks.amazonaws.com/role-arn"])
	p := cronJobOf(t, "kubernetes/examples/s3-irsa")
	c := p.reaperContainers()[0]
	roots, ok := envValue(c, "REAPER_ROOTS")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(roots, "s3://"), roots)
	region, ok := envValue(c, "AWS_REGION")
	require.True(t, ok)
	require.NotEmpty(t, region)
	require.Nil(t, p.volume("lancedb"), "the local data volume is gone")
	for _, m := range c.VolumeMounts {
		require.NotEqual(t, "lancedb", m.Name)
	}
	var push string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--pushgateway="); ok {
			push = v
		}
	}
	require.Regexp(t, `^http://[a-z0-9.-]+:9091$`, push)
}

// TestGCSWorkloadIdentityExample: the Workload Identity annotation on the
// ServiceAccount the pods use, a gs:// root and no storage options (the
// metadata server's credentials), pods on metadata-server nodes, no local
// data volume, and a push to a Pushgateway.
func TestGCSWorkloadIdentityExample(t *testing.T) {
	dir := "kubernetes/examples/gcs-workload-identity"
	b := buildOf(t, dir)
	o, ok := b.find("ServiceAccount", "reaper")
	require.True(t, ok)
	sa := o.obj.(*corev1.ServiceAccount)
	require.Regexp(t, `^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z][a-z0-9-]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com$`, sa.Annotations["iam.gke.io/gcp-service-account"])
	p := cronJobOf(t, dir)
	require.Equal(t, "true", p.spec.Spec.NodeSelector["iam.gke.io/gke-metadata-server-enabled"])
	c := p.reaperContainers()[0]
	roots, ok := envValue(c, "REAPER_ROOTS")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(roots, "gs://"), roots)
	for _, e := range c.Env {
		require.NotContains(t, e.Name, "GOOGLE_APPLICATION_CREDENTIALS", "Workload Identity needs no key file")
	}
	require.Nil(t, p.volume("lancedb"), "the local data volume is gone")
	var push string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--pushgateway="); ok {
			push = v
		}
	}
	require.Regexp(t, `^http://[a-z0-9.-]+:9091$`, push)
}

// TestSidecarExample: reaper shares the LanceDB container's volume, as the
// same user, and purges /data/lancedb.
func TestSidecarExample(t *testing.T) {
	p := podTemplatesOf(t, "kubernetes/examples/sidecar", "Deployment")
	require.Len(t, p.spec.Spec.Containers, 2)
	r := p.reaperContainers()
	require.Len(t, r, 1)
	roots, ok := envValue(r[0], "REAPER_ROOTS")
	require.True(t, ok)
	require.Equal(t, "/data/lancedb", roots)
	var other *corev1.Container
	for i := range p.spec.Spec.Containers {
		if p.spec.Spec.Containers[i].Name != r[0].Name {
			other = &p.spec.Spec.Containers[i]
		}
	}
	mountOf := func(c *corev1.Container) (string, string) {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(roots+"/", strings.TrimSuffix(m.MountPath, "/")+"/") {
				return m.Name, m.MountPath
			}
		}
		return "", ""
	}
	rv, rp := mountOf(r[0])
	ov, op := mountOf(other)
	require.NotEmpty(t, rv, "reaper mounts nothing that holds %s", roots)
	require.Equal(t, rv, ov, "both containers must mount the same volume")
	require.Equal(t, rp, op, "at the same path")
	require.NotNil(t, p.volume(rv).PersistentVolumeClaim)
	_, ok = p.build.find("PersistentVolumeClaim", p.volume(rv).PersistentVolumeClaim.ClaimName)
	require.True(t, ok, "the example ships its PersistentVolumeClaim")
	require.NotNil(t, p.spec.Spec.SecurityContext.RunAsUser, "one user for both containers")
	require.Nil(t, r[0].SecurityContext.RunAsUser)
	require.Nil(t, other.SecurityContext.RunAsUser)
}

// TestDashboardConfigMap: deploy/grafana ships the dashboard file unchanged,
// labelled for Grafana's sidecar.
func TestDashboardConfigMap(t *testing.T) {
	b := buildOf(t, "grafana")
	o, ok := b.find("ConfigMap", "reaper-dashboard")
	require.True(t, ok)
	cm := o.obj.(*corev1.ConfigMap)
	want, err := os.ReadFile(filepath.Join("grafana", "reaper-dashboard.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), cm.Data["reaper-dashboard.json"])
	require.Equal(t, "1", cm.Labels["grafana_dashboard"])
}

func cronJobOf(t *testing.T, dir string) podTemplate {
	t.Helper()
	return podTemplatesOf(t, dir, "CronJob")
}

func podTemplatesOf(t *testing.T, dir, kind string) podTemplate {
	t.Helper()
	var out []podTemplate
	for _, p := range podTemplates(t) {
		if p.build.dir == dir && strings.HasPrefix(p.owner, kind+"/") {
			out = append(out, p)
		}
	}
	require.Len(t, out, 1, "%s: %s", dir, kind)
	return out[0]
}

// TestAzureWorkloadIdentityExample: the workload-identity client ID on the
// ServiceAccount, the label the webhook needs on the pods, an az:// root
// with its account, no local data volume, and a push to a Pushgateway.
func TestAzureWorkloadIdentityExample(t *testing.T) {
	const dir = "kubernetes/examples/azure-workload-identity"
	b := buildOf(t, dir)
	o, ok := b.find("ServiceAccount", "reaper")
	require.True(t, ok)
	sa := o.obj.(*corev1.ServiceAccount)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, sa.Annotations["azure.workload.identity/client-id"])
	p := cronJobOf(t, dir)
	require.Equal(t, "true", p.spec.Labels["azure.workload.identity/use"], "the webhook mutates only labelled pods")
	c := p.reaperContainers()[0]
	roots, ok := envValue(c, "REAPER_ROOTS")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(roots, "az://"), roots)
	account, ok := envValue(c, "AZURE_STORAGE_ACCOUNT_NAME")
	require.True(t, ok)
	require.NotEmpty(t, account)
	require.Nil(t, p.volume("lancedb"), "the local data volume is gone")
	var push string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--pushgateway="); ok {
			push = v
		}
	}
	require.Regexp(t, `^http://[a-z0-9.-]+:9091$`, push)
}

// TestGoMemLimitLeavesHeadroom: GOMEMLIMIT leaves the reaper container's
// memory limit room for what the Go runtime does not count: the static
// executable's own pages (about 30MiB resident, BENCHMARKS.md's memory
// section: RSS less RssAnon), stacks and the kernel's page cache of the
// cgroup. With 90% of 256Mi (25Mi of room) a big root's pass went past the
// limit with its heap still under GOMEMLIMIT.
func TestGoMemLimitLeavesHeadroom(t *testing.T) {
	units := map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	const room = 64 << 20
	for _, p := range podTemplates(t) {
		for _, c := range p.reaperContainers() {
			v, ok := envValue(c, "GOMEMLIMIT")
			require.True(t, ok, "%s: GOMEMLIMIT is set", p)
			var n int64
			var unit string
			_, err := fmt.Sscanf(v, "%d%s", &n, &unit)
			require.NoError(t, err, "%s: GOMEMLIMIT=%q", p, v)
			require.Contains(t, units, unit, "%s: GOMEMLIMIT=%q", p, v)
			limit := c.Resources.Limits.Memory().Value()
			require.LessOrEqual(t, n*units[unit], limit-room, "%s: GOMEMLIMIT=%s of a %d-byte limit leaves less than 64MiB", p, v, limit)
			require.Greater(t, float64(n*units[unit]), 0.7*float64(limit), "%s: GOMEMLIMIT=%s wastes the limit", p, v)
		}
	}
}
