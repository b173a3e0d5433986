package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cli runs the reaper binary against one root.
type cli struct {
	bin string
	b   backend
}

// run runs `reaper <command> --root <root> <storage options> <args...>` and
// returns its stdout and exit code; stderr (the logs) goes to the test log.
func (c cli) run(t *testing.T, command string, args ...string) (string, int) {
	t.Helper()
	argv := append([]string{command, "--root", c.b.uri()}, c.b.cliArgs()...)
	return c.exec(t, append(argv, args...)...)
}

// exec runs `reaper <argv...>` as run does, with no root added (a
// configuration file names it).
func (c cli) exec(t *testing.T, argv ...string) (string, int) {
	t.Helper()
	command, args := argv[0], argv[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, argv...)
	cmd.Env = hermeticEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("reaper %s: %v", command, err)
	}
	t.Logf("reaper %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", command, strings.Join(args, " "), code, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	return stdout.String(), code
}

// hermeticEnv is the environment without REAPER_* variables: reaper reads
// its settings from them (REAPER_DRY_RUN, REAPER_SAFETY_MIN_TTL...), and a
// developer's shell must not change what the suite tests.
func hermeticEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REAPER_") {
			env = append(env, kv)
		}
	}
	return env
}

// statusJSON is one entry of `reaper status -o json`.
type statusJSON struct {
	Name         string  `json:"name"`
	State        string  `json:"state"`
	DeletedAtMs  *int64  `json:"deleted_at_ms"`
	TTLMs        *int64  `json:"ttl_ms"`
	PurgeAfterMs *int64  `json:"purge_after_ms"`
	Due          bool    `json:"due"`
	Problem      *string `json:"problem"`
	LeaseOwner   *string `json:"lease_owner"`
	Held         bool    `json:"held"`
}

// status runs `reaper status -o json` and indexes it by name.
func (c cli) status(t *testing.T, names ...string) map[string]statusJSON {
	t.Helper()
	out, code := c.run(t, "status", append([]string{"-o", "json"}, names...)...)
	if code != 0 {
		t.Fatalf("reaper status: exit %d, want 0; stdout:\n%s", code, out)
	}
	var list []statusJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("reaper status -o json: %v\n%s", err, out)
	}
	m := make(map[string]statusJSON, len(list))
	for _, s := range list {
		if _, dup := m[s.Name]; dup {
			t.Fatalf("reaper status lists %q twice", s.Name)
		}
		m[s.Name] = s
	}
	return m
}

// purgeJSON is the output of `reaper purge -o json`.
type purgeJSON struct {
	Purged []struct {
		Name    string `json:"name"`
		Objects int64  `json:"objects"`
		Bytes   int64  `json:"bytes"`
	} `json:"purged"`
	Skipped []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Failed []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"failed"`
	DryRun bool `json:"dry_run"`
}

// purge runs one `reaper purge -o json --allow-short-ttl` pass.
func (c cli) purge(t *testing.T, args ...string) (purgeJSON, int) {
	t.Helper()
	out, code := c.run(t, "purge", append([]string{"-o", "json", "--allow-short-ttl"}, args...)...)
	var p purgeJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("reaper purge -o json (exit %d): %v\n%s", code, err, out)
	}
	return p, code
}
