package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestImageMustBeSet: every reaper container of every shipped manifest
// names the placeholder image, with no tag: a user sets the image they
// built, by digest, in their overlay (kustomize's images transformer), and
// one who does not gets a pod that cannot pull (the .invalid domain never
// resolves), never a mutable :latest. An overlay's images entry reaches
// every reaper container of every workload, and only those.
func TestImageMustBeSet(t *testing.T) {
	require.True(t, strings.HasSuffix(strings.SplitN(reaperImage, "/", 2)[0], ".invalid"), "RFC 2606: never resolves")
	workloads := map[string]bool{}
	for _, p := range podTemplates(t) {
		for _, c := range p.spec.Spec.Containers {
			if c.Name == "reaper" {
				require.Equal(t, reaperImage, c.Image, "%s: the reaper container names the placeholder, untagged", p)
				workloads[p.build.dir] = true
			} else {
				require.NotContains(t, c.Image, reaperImage, "%s: %s", p, c.Name)
			}
		}
	}

	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for dir := range workloads {
		t.Run(dir, func(t *testing.T) {
			abs, err := filepath.Abs(dir)
			require.NoError(t, err)
			overlay := t.TempDir()
			base, err := filepath.Rel(overlay, abs) // kustomize takes no absolute path
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(
				"resources:\n  - "+base+"\nimages:\n  - name: "+reaperImage+"\n    newName: registry.example.com/reaper\n    digest: "+digest+"\n"), 0o644))
			m, err := k.Run(filesys.MakeFsOnDisk(), overlay)
			require.NoError(t, err)
			n := 0
			for _, r := range m.Resources() {
				data, err := r.AsYAML()
				require.NoError(t, err)
				o, err := decodeStrict(data)
				require.NoError(t, err)
				for _, c := range containersOf(o) {
					require.NotContains(t, c.Image, ".invalid", "%s: %s", o.name, c.Name)
					if c.Name == "reaper" {
						require.Equal(t, "registry.example.com/reaper@"+digest, c.Image)
						n++
					}
				}
			}
			require.Positive(t, n, "the overlay set no reaper container's image")
		})
	}
}

// containersOf returns the containers of a workload object.
func containersOf(o object) []corev1.Container {
	b := &build{objects: []object{o}}
	for _, p := range podTemplatesIn(b) {
		return p.spec.Spec.Containers
	}
	return nil
}
