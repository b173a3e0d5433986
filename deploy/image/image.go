// Package image builds reaper's release image without a base image and
// without a Docker engine: one layer holding the static binary, a passwd
// and group naming the nonroot user (65532), its home and a sticky /tmp,
// for each platform, in one OCI image index.
//
// There is no base image to pin by digest, nothing in the image but reaper
// (no shell, no package manager, no CA bundle or zone files to go stale:
// the binary embeds both, see cmd/reaper/embedded.go), and the same
// binaries and epoch give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user every reaper container runs as; the manifests' runAsUser.
const (
	UID  = 65532
	User = "65532:65532"
	// Port is the listen port of `reaper run` (config key listen).
	Port = "9090/tcp"
	// Entrypoint is where the binary lands.
	Entrypoint = "/reaper"
)

// Options says what goes into the index.
type Options struct {
	// Binaries maps a platform ("linux/amd64") to a static reaper binary
	// built for it (make image builds them with make build's flags).
	Binaries map[string]string
	// Version, Revision and Source become the org.opencontainers.image.*
	// labels.
	Version, Revision, Source string
	// Created is the image's creation time and every file's mtime: the
	// commit's time (SOURCE_DATE_EPOCH) keeps the digest reproducible.
	Created time.Time
}

// machines is the ELF machine each supported GOARCH builds for.
var machines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// Build returns the OCI image index of opts' platforms, in platform order.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, errors.New("no binaries: pass --binary linux/amd64=<path> (make image builds them)")
	}
	platforms := make([]string, 0, len(opts.Binaries))
	for p := range opts.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, plat, err := buildOne(p, opts.Binaries[p], opts)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	return idx, nil
}

// WriteLayout writes idx as an OCI image layout in dir (replacing what was
// there), its one entry named tag (org.opencontainers.image.ref.name):
// `skopeo copy --all oci:dir:tag docker://ref`, `crane push dir ref` or
// `reaper-image --push` publish it.
func WriteLayout(dir, tag string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
	}))
}

func buildOne(platform, bin string, opts Options) (v1.Image, *v1.Platform, error) {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok || osName != "linux" || machines[arch] == 0 {
		return nil, nil, fmt.Errorf("platform %q: want linux/<arch>, arch one of amd64, arm64, arm, ppc64le, s390x, riscv64", platform)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, nil, fmt.Errorf("platform %s: %w (make image builds it)", platform, err)
	}
	if err := checkStatic(bin, data, machines[arch]); err != nil {
		return nil, nil, fmt.Errorf("platform %s: %w", platform, err)
	}
	layerTar, err := rootfs(data, opts.Created)
	if err != nil {
		return nil, nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: opts.Created}, CreatedBy: "deploy/image: reaper " + opts.Version},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = osName, arch
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = v1.Config{
		User:         User,
		Entrypoint:   []string{Entrypoint},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{Port: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "reaper",
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.revision": opts.Revision,
			"org.opencontainers.image.source":   opts.Source,
			"org.opencontainers.image.created":  opts.Created.UTC().Format(time.RFC3339),
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, err
	}
	return img, &v1.Platform{OS: osName, Architecture: arch}, nil
}

// checkStatic refuses a binary that would not run on an image with no
// libc or for another machine.
func checkStatic(name string, data []byte, want elf.Machine) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary (%v): build it with GOOS=linux (make image)", name, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s: build it with the platform's GOARCH (make image)", name, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("%s is dynamically linked and would not run on an image with no libc: build it with CGO_ENABLED=0 (make image)", name)
		}
	}
	return nil
}

// file is one entry of the image's only layer.
type file struct {
	name     string
	mode     int64
	uid      int
	dir      bool
	contents []byte
}

// rootfs is the image's only layer: everything a nonroot reaper needs.
func rootfs(bin []byte, mtime time.Time) ([]byte, error) {
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, contents: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))},
		{name: "etc/passwd", mode: 0o644, contents: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID))},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: UID, dir: true},
		{name: path.Base(Entrypoint), mode: 0o755, contents: bin},
		// A purge of more than 10,000 objects spills its key list here
		// when no emptyDir is mounted (docker run, a plain Pod).
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid,
			ModTime: mtime.Truncate(time.Second), Format: tar.FormatUSTAR,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
