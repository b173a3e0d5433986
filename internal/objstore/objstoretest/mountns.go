package objstoretest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// EnvRequireMounts=1 (or CI=true) turns "cannot make a mount
	// namespace here" from a skip into a failure, so CI never passes
	// without the tests that mount file systems.
	EnvRequireMounts = "REAPER_REQUIRE_MOUNTS"
	// envMountNS names, in the child InMountNamespace starts, the test
	// that runs there.
	envMountNS = "REAPER_TEST_MOUNTNS"
)

// mountNSTimeout bounds one test run in a mount namespace.
const mountNSTimeout = 5 * time.Minute

// InMountNamespace lets a test mount file systems and bind mounts without
// touching the host: it runs the test again, alone, in a child process of
// this test binary with a private mount namespace of its own (as root:
// unshare(CLONE_NEWNS), Go's exec then makes / private recursively;
// otherwise inside a new user namespace, whose mounts never propagate
// back). Every mount dies with the child. It returns true in the child,
// where the test goes on and does its mounts; in the parent it runs the
// child, fails the test if the child did not pass, and returns false: the
// caller returns. Call it first thing in a top-level test.
func InMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envMountNS) == t.Name() {
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("InMountNamespace(%s): call it from a top-level test", t.Name())
	}
	ctx, cancel := context.WithTimeout(t.Context(), mountNSTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envMountNS+"="+t.Name())
	cmd.SysProcAttr = mountNSAttr()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		if required(EnvRequireMounts) {
			t.Fatalf("%s: cannot start the test in a mount namespace (%v); %s=1 or CI=true requires it: run as root, or allow unprivileged user namespaces", t.Name(), err, EnvRequireMounts)
		}
		t.Skipf("cannot start the test in a mount namespace: %v (set %s=1 to fail instead)", err, EnvRequireMounts)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a mount namespace: %v\n%s", t.Name(), err, out)
	}
	t.Logf("ran in a private mount namespace:\n%s", out)
	return false
}

// mountNSAttr makes the child's mount namespace: as root a plain private
// one; otherwise one owned by a new user namespace mapping this user to
// root, in which mounts are allowed.
func mountNSAttr() *syscall.SysProcAttr {
	if os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
}
