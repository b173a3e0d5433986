package deploy

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM ... section of a Dockerfile.
type stage struct {
	from, name string
	instrs     []instruction
}

// parseDockerfile splits a Dockerfile into its global ARGs and its stages.
func parseDockerfile(t *testing.T, path string) (global []instruction, stages []*stage) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			s := &stage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
			return
		}
		if len(stages) == 0 {
			global = append(global, in)
			return
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	require.NoError(t, sc.Err())
	flush()
	return global, stages
}

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

// argDefault is the default of ARG name in instrs.
func argDefault(instrs []instruction, name string) (string, bool) {
	for _, in := range instrs {
		if in.cmd != "ARG" {
			continue
		}
		n, v, ok := strings.Cut(in.args, "=")
		if n == name && ok {
			return v, true
		}
	}
	return "", false
}

// testVersion stands in for VERSION when both build commands are expanded.
const testVersion = "v0.0.0-deploy-check"

// makeBuildRecipe is `make build`'s command as make would run it.
func makeBuildRecipe(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "-n", "build", "GO=go", "VERSION="+testVersion)
	cmd.Dir = repoDir(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n build: %s", out)
	var recipe []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, " build ") {
			recipe = append(recipe, line)
		}
	}
	require.Len(t, recipe, 1, "make -n build:\n%s", out)
	return recipe[0]
}

// TestDockerfileBuildsLikeMake: the image's binary is built by the same
// command as `make build` (the binary CI builds and tests), with the Go
// version go.mod asks for, and lands as /reaper on distroless nonroot.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	global, stages := parseDockerfile(t, "Dockerfile")
	require.Len(t, stages, 2, "a build stage and the runtime stage")
	build, final := stages[0], stages[1]

	gomod, err := os.ReadFile(filepath.Join(repoDir(t), "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	require.NotNil(t, goLine, "go.mod has a go line")
	goVersion, ok := argDefault(global, "GO_VERSION")
	require.True(t, ok, "ARG GO_VERSION=<go.mod's go version> before the first FROM")
	require.Equal(t, string(goLine[1]), goVersion, "the image builds with go.mod's Go version")
	require.Equal(t, "golang:${GO_VERSION}-bookworm", build.from)
	require.Equal(t, "build", build.name)

	// The RUN that builds reaper is make build's recipe, word for word.
	var workdir, run string
	for _, in := range build.instrs {
		switch {
		case in.cmd == "WORKDIR":
			workdir = in.args
		case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
			require.Empty(t, run, "one go build in the build stage")
			run = in.args
		}
	}
	require.NotEmpty(t, run, "the build stage runs go build")
	_, ok = argDefault(build.instrs, "VERSION")
	require.True(t, ok, "ARG VERSION=<default> in the build stage")
	docker := shellWords(t, run, "VERSION="+testVersion)
	makeCmd := shellWords(t, makeBuildRecipe(t))
	require.Equal(t, makeCmd, docker, "deploy/Dockerfile's go build differs from `make build`")
	require.Contains(t, docker, "CGO_ENABLED=0")
	require.Contains(t, docker, "-trimpath")
	require.Contains(t, docker, "-s -w -X main.version="+testVersion)
	out := ""
	for i, w := range docker {
		if w == "-o" {
			out = docker[i+1]
		}
	}
	require.NotEmpty(t, out)

	// The runtime stage: distroless nonroot, the binary at /reaper, no shell.
	require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", final.from)
	var copied, entry, user string
	for _, in := range final.instrs {
		require.NotContains(t, []string{"RUN", "SHELL"}, in.cmd, "the runtime image has no shell")
		switch in.cmd {
		case "COPY":
			copied = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "USER":
			user = in.args
		}
	}
	require.Equal(t, "--from=build "+filepath.Join(workdir, out)+" /reaper", copied)
	var argv []string
	require.NoError(t, json.Unmarshal([]byte(entry), &argv), "ENTRYPOINT in exec form")
	require.Equal(t, []string{"/reaper"}, argv)
	require.Equal(t, "nonroot:nonroot", user)

	// The build context leaves out what the image must not carry.
	ignore, err := os.ReadFile("Dockerfile.dockerignore")
	require.NoError(t, err)
	for _, p := range []string{".git", ".tools", "bin", "var"} {
		require.Contains(t, strings.Fields(string(ignore)), p, "Dockerfile.dockerignore")
	}
}

// TestBinaryIsStatic: the binary `make build` produced (the Dockerfile's
// command) has no ELF interpreter and no dynamic section, so it runs on
// distroless/static, and carries the flags it was built with.
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

	// -X main.version reached the binary: main.go's default is "dev".
	r := runReaper(t, nil, "version")
	require.Equal(t, 0, r.code, r.String())
	require.Regexp(t, `^reaper \S+\n$`, r.stdout)
	require.NotEqual(t, "reaper dev", strings.TrimSpace(r.stdout), "%s was built without -X main.version", bin)
}
