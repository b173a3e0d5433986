package deploy

import (
	"archive/tar"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/lance-reaper/reaper/deploy/image"
)

// shellWords parses one simple shell command and expands it with env, the
// way /bin/sh would: assignments first, then the words.
func shellWords(t *testing.T, cmd string, env ...string) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	require.NoError(t, err, "parse %q", cmd)
	require.Len(t, f.Stmts, 1, "one command in %q", cmd)
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	require.True(t, ok, "a simple command: %q", cmd)
	cfg := &expand.Config{Env: expand.ListEnviron(env...), NoUnset: true}
	var words []string
	for _, a := range call.Assigns {
		v, err := expand.Literal(cfg, a.Value)
		require.NoError(t, err)
		words = append(words, a.Name.Value+"="+v)
	}
	for _, w := range call.Args {
		v, err := expand.Literal(cfg, w)
		require.NoError(t, err, "expand %q", cmd)
		words = append(words, v)
	}
	return words
}

// testVersion stands in for VERSION when the build commands are expanded.
const testVersion = "v0.0.0-deploy-check"

// makeRecipe is target's commands as make would run them, one per line.
func makeRecipe(t *testing.T, target string, vars ...string) []string {
	t.Helper()
	args := append([]string{"--no-print-directory", "-n", "-B", target, "GO=go", "VERSION=" + testVersion}, vars...)
	cmd := exec.Command("make", args...)
	cmd.Dir = repoDir(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n %s: %s", target, out)
	return strings.Split(strings.TrimSpace(strings.ReplaceAll(string(out), "\\\n", "")), "\n")
}

// withoutOutput drops "-o <file>" from a go build command line and returns
// the file.
func withoutOutput(t *testing.T, words []string) ([]string, string) {
	t.Helper()
	for i, w := range words {
		if w == "-o" {
			require.Less(t, i+1, len(words))
			return append(append([]string{}, words[:i]...), words[i+2:]...), words[i+1]
		}
	}
	t.Fatalf("no -o in %q", words)
	return nil, ""
}

// TestImageBuildsLikeMake: `make image` builds each platform's binary with
// `make build`'s command (the binary every test runs), differing only in
// GOOS/GOARCH and -o, and hands those files to reaper-image.
func TestImageBuildsLikeMake(t *testing.T) {
	var build []string
	var replace string
	for _, line := range makeRecipe(t, "build") {
		if strings.Contains(line, " build ") {
			require.Nil(t, build, "one go build in make build")
			build = shellWords(t, line)
		}
		if strings.Contains(line, "cmp -s") {
			replace = line
		}
	}
	require.NotNil(t, build, "make -n build runs go build")
	build, out := withoutOutput(t, build)
	require.Equal(t, "bin/.reaper.new", out)
	require.Contains(t, replace, "mv bin/.reaper.new bin/reaper", "make build replaces ./bin/reaper when the new build differs")
	require.Contains(t, build, "CGO_ENABLED=0")
	require.Contains(t, build, "-trimpath")
	require.Contains(t, build, "-s -w -X main.version="+testVersion)

	recipe := makeRecipe(t, "image", "IMAGE_PLATFORMS=linux/amd64 linux/arm64")
	var built []string
	var run string
	for _, line := range recipe {
		switch {
		case strings.Contains(line, " build "):
			words := shellWords(t, line)
			require.GreaterOrEqual(t, len(words), 2)
			require.Regexp(t, `^GOOS=linux$`, words[0])
			require.Regexp(t, `^GOARCH=(amd64|arm64)$`, words[1])
			rest, file := withoutOutput(t, words[2:])
			require.Equal(t, build, rest, "make image builds %s unlike make build", file)
			require.Equal(t, "var/image/reaper-linux-"+strings.TrimPrefix(words[1], "GOARCH="), file)
			built = append(built, file)
		case strings.Contains(line, "reaper-image"):
			run = line
		}
	}
	require.Len(t, built, 2, "make -n image:\n%s", strings.Join(recipe, "\n"))
	require.NotEmpty(t, run, "make image runs deploy/cmd/reaper-image")
	for _, f := range built {
		p := strings.TrimPrefix(f, "var/image/reaper-")
		p = strings.Replace(p, "-", "/", 1)
		require.Contains(t, run, "--binary "+p+"=../"+f)
	}
	require.Contains(t, run, "--version "+testVersion)
	require.NotContains(t, run, "--push", "make image pushes only when IMAGE is set")
	require.Contains(t, strings.Join(makeRecipe(t, "image", "IMAGE_PLATFORMS=linux/amd64", "IMAGE=registry.example/reaper:v1"), "\n"),
		"--push registry.example/reaper:v1")
}

// hostPlatform is the platform ./bin/reaper was built for.
func hostPlatform() string { return "linux/" + runtime.GOARCH }

// TestImageRunsAsNonrootWithNothingElse builds the image from ./bin/reaper,
// reads it back from its OCI layout, checks its config and its only layer
// file by file, then runs its root filesystem as a container would: chrooted,
// as user 65532 (in a user namespace), with no libc, no CA bundle and no
// zone files. There, reaper's demo writes and purges under /tmp, and a
// CRON_TZ= schedule loads from the zones the binary embeds.
func TestImageRunsAsNonrootWithNothingElse(t *testing.T) {
	bin := reaperBin(t)
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opts := image.Options{
		Binaries: map[string]string{hostPlatform(): bin},
		Version:  testVersion, Revision: "abc123", Source: "https://example.com/reaper", Created: created,
	}
	idx, err := image.Build(opts)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "oci")
	require.NoError(t, image.WriteLayout(dir, testVersion, idx))

	// Reproducible: the same binary and epoch give the same digest.
	again, err := image.Build(opts)
	require.NoError(t, err)
	d1, err := idx.Digest()
	require.NoError(t, err)
	d2, err := again.Digest()
	require.NoError(t, err)
	require.Equal(t, d1, d2, "two builds of the same inputs differ")

	// The layout holds one index, named by the version, with one image.
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	topm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topm.Manifests, 1)
	require.Equal(t, testVersion, topm.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	require.Equal(t, d1, topm.Manifests[0].Digest)
	inner, err := top.ImageIndex(d1)
	require.NoError(t, err)
	im, err := inner.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.Equal(t, &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, im.Manifests[0].Platform)
	img, err := inner.Image(im.Manifests[0].Digest)
	require.NoError(t, err)

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, runtime.GOARCH, cf.Architecture)
	require.Equal(t, created, cf.Created.UTC())
	require.Equal(t, "65532:65532", cf.Config.User, "the manifests' runAsUser")
	require.Equal(t, []string{"/reaper"}, cf.Config.Entrypoint)
	require.Empty(t, cf.Config.Cmd)
	require.Equal(t, map[string]struct{}{"9090/tcp": {}}, cf.Config.ExposedPorts)
	require.Equal(t, testVersion, cf.Config.Labels["org.opencontainers.image.version"])
	require.Equal(t, "abc123", cf.Config.Labels["org.opencontainers.image.revision"])
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "one layer: no base image")

	// Every file of the image, as a runtime unpacks it.
	want := map[string]struct {
		mode int64
		uid  int
	}{
		"etc": {0o755, 0}, "etc/group": {0o644, 0}, "etc/passwd": {0o644, 0},
		"home": {0o755, 0}, "home/nonroot": {0o700, 65532},
		"reaper": {0o755, 0}, "tmp": {0o1777, 0},
	}
	rootfs := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		h.Name = strings.TrimSuffix(h.Name, "/")
		w, ok := want[h.Name]
		require.True(t, ok, "unexpected file %s in the image", h.Name)
		seen[h.Name] = true
		require.Equal(t, w.mode, h.Mode, "mode of %s", h.Name)
		require.Equal(t, w.uid, h.Uid, "owner of %s", h.Name)
		require.Equal(t, w.uid, h.Gid, "group of %s", h.Name)
		require.Equal(t, created, h.ModTime.UTC(), "mtime of %s", h.Name)
		target := filepath.Join(rootfs, h.Name)
		if h.Typeflag == tar.TypeDir {
			require.NoError(t, os.MkdirAll(target, 0o755))
			require.NoError(t, os.Chmod(target, os.FileMode(h.Mode&0o777)|os.ModeSticky*os.FileMode(h.Mode>>9&1)))
			continue
		}
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(target, b, os.FileMode(h.Mode)))
	}
	require.Len(t, seen, len(want))
	same, err := os.ReadFile(filepath.Join(rootfs, "reaper"))
	require.NoError(t, err)
	orig, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.True(t, string(orig) == string(same), "/reaper is not ./bin/reaper byte for byte")
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	require.NoError(t, err)
	require.Contains(t, string(passwd), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
	for _, p := range []string{"etc/ssl", "usr/share/zoneinfo", "lib", "bin/sh"} {
		require.NoFileExists(t, filepath.Join(rootfs, p))
		require.NoDirExists(t, filepath.Join(rootfs, p))
	}

	// Run it as a container would. The schedule's zone must come from the
	// binary: the root filesystem has no zoneinfo.
	inImage := func(args ...string) result {
		t.Helper()
		cmd := exec.Command("/reaper", args...)
		cmd.Env = []string{"HOME=/home/nonroot", "TZ=UTC"}
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:                     rootfs,
			Cloneflags:                 syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: image.UID, HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: image.UID, HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
			Credential:                 &syscall.Credential{Uid: image.UID, Gid: image.UID},
		}
		cmd.Dir = "/"
		return runCmd(t, cmd)
	}
	r := inImage("version")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "reaper "+strings.TrimPrefix(strings.TrimSpace(runReaper(t, nil, "version").stdout), "reaper ")+"\n", r.stdout)
	r = inImage("demo", "--dir", "/tmp/demo")
	require.Equal(t, 0, r.code, "the demo in the image: %s", r)
	require.Contains(t, r.stdout, "purged")
	r = inImage("purge", "--root", "/tmp/demo/db", "--set", "schedule=CRON_TZ=Europe/Berlin 30 3 * * *")
	require.Equal(t, 0, r.code, "a CRON_TZ schedule in the image: %s", r)
}

// TestImageRefusesWrongBinaries: a binary that would not run on the image
// (another machine, dynamically linked, not ELF, missing) or a platform it
// cannot be is refused with the file and the fix.
func TestImageRefusesWrongBinaries(t *testing.T) {
	bin := reaperBin(t)
	other := "linux/arm64"
	if runtime.GOARCH == "arm64" {
		other = "linux/amd64"
	}
	text := filepath.Join(t.TempDir(), "reaper.txt")
	require.NoError(t, os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755))
	dynamic, err := exec.LookPath("sh")
	require.NoError(t, err)
	dynamic, err = filepath.EvalSymlinks(dynamic)
	require.NoError(t, err)
	f, err := elf.Open(dynamic)
	require.NoError(t, err)
	interp := false
	for _, p := range f.Progs {
		interp = interp || p.Type == elf.PT_INTERP
	}
	require.NoError(t, f.Close())
	require.True(t, interp, "%s is expected to be dynamically linked", dynamic)

	for _, tc := range []struct {
		name, platform, bin string
		want                []string
	}{
		{"another machine", other, bin, []string{bin, "is built for", "GOARCH", "make image"}},
		{"dynamic", hostPlatform(), dynamic, []string{dynamic, "dynamically linked", "CGO_ENABLED=0"}},
		{"not ELF", hostPlatform(), text, []string{text, "not an ELF binary", "GOOS=linux"}},
		{"missing", hostPlatform(), filepath.Join(t.TempDir(), "nope"), []string{"nope", "no such file", "make image builds it"}},
		{"not linux", "darwin/" + runtime.GOARCH, bin, []string{`platform "darwin/`, "want linux/<arch>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := image.Build(image.Options{Binaries: map[string]string{tc.platform: tc.bin}})
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	_, err = image.Build(image.Options{})
	require.ErrorContains(t, err, "--binary linux/amd64=")
}

// TestBinaryIsStatic: the binary `make build` produced (the image's
// command) has no ELF interpreter and no dynamic section, so it runs on an
// image with no libc, carries the flags it was built with, and embeds the
// CA roots and zone database the image does not have.
func TestBinaryIsStatic(t *testing.T) {
	bin := reaperBin(t)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader", bin)
		require.NotEqual(t, elf.PT_DYNAMIC, p.Type, "%s has a dynamic segment", bin)
	}
	require.Nil(t, f.Section(".dynamic"), "%s has a .dynamic section", bin)
	require.Nil(t, f.Section(".interp"), "%s has an .interp section", bin)
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs)

	// Go records CGO_ENABLED and -trimpath (not -ldflags, under -trimpath).
	info, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	require.Equal(t, "0", settings["CGO_ENABLED"])
	require.Equal(t, "true", settings["-trimpath"])
	require.Equal(t, "github.com/lance-reaper/reaper/cmd/reaper", info.Path)
	var deps []string
	for _, d := range info.Deps {
		deps = append(deps, d.Path)
	}
	require.Contains(t, deps, "golang.org/x/crypto/x509roots/fallback", "the image has no /etc/ssl/certs: cmd/reaper/embedded.go")

	// -X main.version reached the binary: main.go's default is "dev".
	r := runReaper(t, nil, "version")
	require.Equal(t, 0, r.code, r.String())
	require.Regexp(t, `^reaper \S+\n$`, r.stdout)
	require.NotEqual(t, "reaper dev", strings.TrimSpace(r.stdout), "%s was built without -X main.version", bin)
}
