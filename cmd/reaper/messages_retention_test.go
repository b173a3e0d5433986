package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetentionMessages: -q quiets retain as it does purge (a failure
// still shows); a dry run says "would remove"; with -v it lists the kept
// versions and the files; a --before in the future says so, refused or,
// with --allow-short-ttl, planned; hold says it stops retention too.
func TestRetentionMessages(t *testing.T) {
	root, _, _ := retainFixture(t)
	before := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)

	code, stdout, stderr := run(t, "retain", "-q", "--root", root, "--older-than", "7d")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout, "-q: nothing to say when nothing failed")
	require.Empty(t, stderr)
	code, stdout, _ = run(t, "retain", "-q", "--root", root, "--older-than", "7d", "-o", "json")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, `"tables"`, "-o json is printed whole")

	code, stdout, stderr = run(t, "retain", "--root", root, "--before", before, "--dry-run", "--log-level", "error")
	require.Equal(t, exitUsage, code, stdout)
	require.Contains(t, lastLine(stderr), "retain: before "+before+" is in the future by the store's clock (")

	code, stdout, stderr = run(t, "retain", "--root", root, "--before", before, "--allow-short-ttl", "--dry-run", "-v", "--log-level", "warn")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `events +planned +\d+ +\d+ +\d+ +.* would remove versions 1[-\d, ]*; cutoff \S+ \(in the future by the store's clock, \S+: no version is kept for its age\)`, stdout)
	require.Regexp(t, `(?m)^events: \d+ versions kept, \d+ would be removed; \d+ files to delete, `, stdout)
	require.Regexp(t, `(?m)^  kept +version \d+ +latest$`, stdout)
	require.Regexp(t, `(?m)^  delete +events\.lance/_versions/\d+\.manifest +\d+ B +manifest of a removed version \(1\)$`, stdout)
	require.Contains(t, stdout, "dry run, nothing was deleted: would remove ")
	require.Contains(t, stderr, `msg="version retention: the cutoff is in the future by the store's clock: no version is kept for its age"`)
	code, stdout, _ = run(t, "retain", "--root", root, "--before", before, "--allow-short-ttl", "--dry-run", "--log-level", "error")
	require.Equal(t, exitOK, code)
	require.NotContains(t, stdout, "  delete ", "the files only with -v")

	code, stdout, stderr = run(t, "hold", "--root", root, "--reason", "case 9", "events")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "events: held (case 9): neither a purge nor version retention deletes anything more of it until 'reaper release'\n", stdout)
	code, stdout, _ = run(t, "retain", "-q", "--root", root, "--before", before, "--allow-short-ttl")
	require.Equal(t, exitOK, code)
	require.Empty(t, stdout, "held: nothing failed")
}

// TestReadOnlyHelpSaysNoDelete: the help of a command that changes nothing
// never says it deletes (a flag or a key may name a deletion: it is a
// name).
func TestReadOnlyHelpSaysNoDelete(t *testing.T) {
	verb := regexp.MustCompile(`(?i)(^|[^-_.a-z])delet(e|es|ed|ing|ion)?([^-_a-z]|$)`)
	for _, cmd := range []string{"status", "audit", "version"} {
		code, stdout, _ := run(t, cmd, "--help")
		require.Equal(t, exitOK, code)
		for _, line := range strings.Split(stdout, "\n") {
			require.False(t, verb.MatchString(line), "reaper %s --help: %q", cmd, line)
		}
	}
}
