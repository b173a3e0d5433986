package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const s3KeysDir = "kubernetes/examples/s3-static-keys"

// s3KeysConfig is the example's own reaper.yaml, as YAML.
type s3KeysConfig struct {
	Roots []struct {
		URI            string            `json:"uri"`
		StorageOptions map[string]string `json:"storage_options"`
	} `json:"roots"`
}

// TestS3StaticKeysExample: the keys reach the pod from a Secret, never the
// ConfigMap; the root and its endpoint come from the example's reaper.yaml
// (no REAPER_ROOTS to replace them), and no local data volume is left.
func TestS3StaticKeysExample(t *testing.T) {
	p := cronJobOf(t, s3KeysDir)
	c := p.reaperContainers()[0]
	_, ok := envValue(c, "REAPER_ROOTS")
	require.False(t, ok, "REAPER_ROOTS would replace reaper.yaml's root and its storage options")
	secrets := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secrets[e.Name] = true
		}
	}
	require.Equal(t, map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true}, secrets)
	require.Nil(t, p.volume("lancedb"), "the local data volume is gone")
	for _, m := range c.VolumeMounts {
		require.NotEqual(t, "lancedb", m.Name)
	}

	var cm *corev1.ConfigMap
	for _, o := range p.build.all("ConfigMap") {
		if strings.HasPrefix(o.name, "reaper-config-") {
			cm = o.obj.(*corev1.ConfigMap)
		}
	}
	require.NotNil(t, cm)
	var cfg s3KeysConfig
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["reaper.yaml"]), &cfg))
	require.Len(t, cfg.Roots, 1)
	require.True(t, strings.HasPrefix(cfg.Roots[0].URI, "s3://"), cfg.Roots[0].URI)
	require.NotEmpty(t, cfg.Roots[0].StorageOptions["aws_endpoint"])
	for k := range cfg.Roots[0].StorageOptions {
		require.NotContains(t, []string{"aws_access_key_id", "aws_secret_access_key", "aws_session_token"}, k, "credentials belong in the Secret")
	}
}

// TestS3StaticKeysPodPasses runs the example's pod against a real S3
// server (versitygw), its endpoint and bucket standing in for the
// example's, the Secret's keys as Kubernetes would set them: the pass
// succeeds, the due table goes and the live one stays.
func TestS3StaticKeysPodPasses(t *testing.T) {
	p := cronJobOf(t, s3KeysDir)
	c := p.reaperContainers()[0]
	s := newSandbox(t, p, c)
	s3 := startVersityGW(t, filepath.Join(t.TempDir(), "s3"))

	// The mounted reaper.yaml, pointed at the test server.
	conf := filepath.Join(s.dir("/etc/reaper"), "reaper.yaml")
	data, err := os.ReadFile(conf)
	require.NoError(t, err)
	var cfg s3KeysConfig
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(cfg.Roots[0].URI, "s3://"), "/")
	text := strings.ReplaceAll(string(data), cfg.Roots[0].StorageOptions["aws_endpoint"], s3.endpoint)
	text = strings.ReplaceAll(text, "s3://"+bucket+"/", "s3://"+s3.bucket+"/")
	require.NoError(t, os.WriteFile(conf, []byte(text), 0o644))

	root := "s3://" + s3.bucket + "/" + prefix
	dir := filepath.Join(s3.dataDir, s3.bucket, filepath.FromSlash(prefix))
	past := time.Now().Add(-time.Hour)
	writeTable(t, dir, "live", past)
	writeTable(t, dir, "dropped", past)
	r := runReaper(t, nil, append([]string{"drop", "--root", root, "--ttl", "1s"}, append(s3.flags(), "dropped")...)...)
	require.Equal(t, 0, r.code, "%s", r)
	waitDue(t, root, s3.flags(), "dropped")

	r = runReaper(t, s.env(map[string]string{
		allowShortTTL:           "true", // the 1s TTL is below safety.min_ttl
		"AWS_ACCESS_KEY_ID":     s3.access,
		"AWS_SECRET_ACCESS_KEY": s3.secret,
	}), s.args(nil)...)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, []string{"success"}, passResults(t, r.stderr), "%s", r)
	require.False(t, tableExists(t, dir, "dropped"), "the due table is purged")
	require.True(t, tableExists(t, dir, "live"), "the live table stays")
}
