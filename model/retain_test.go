package model

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetainModel checks retain.pml (version retention's record,
// docs/RETENTION.md): with the new record rule a full search finds no
// error; with the old one (-DBLIND_RECORD=1: a record a killed run left is
// finished as it is, narrowed only by Recheck) spin finds a run deleting the
// manifest of a version the current policy keeps, once through a policy
// change and once through a table created again. The other rows show where
// the counterexamples come from, and what a drop and create of the table
// during a run (-DRECREATE_MIDRUN=1) and a tag racing the manifest deletes
// (-DRACE=1) still break (model/README.md, "Findings").
func TestRetainModel(t *testing.T) {
	t.Parallel()
	requireTools(t)
	for _, tc := range []struct {
		name    string
		defines []string
		// violated is the assertion pan must report, "" for no error.
		violated string
		// trail are the events the replayed trail must show, in order.
		trail []string
		// minStates is the least a search without error must store
		// (100,000 unless set): a guard against a model that does nothing.
		minStates int64
	}{
		{name: "new rule holds"},
		{
			name:     "old rule: a re-run with another policy",
			defines:  []string{"-DBLIND_RECORD=1", "-DRECREATE=0", "-DWRITER=0"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"writes its record", "crashes before", "finishes it as it is", "deletes the manifest of v\\d \\(incarnation 1,"},
		},
		{
			name:     "old rule: the table dropped and created again",
			defines:  []string{"-DBLIND_RECORD=1", "-DSAME_POLICY=1", "-DWRITER=0"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"writes its record", "crashes before", "drops the table and creates it again", "finishes it as it is", "deletes the manifest of v\\d \\(incarnation 2,"},
		},
		{
			name:     "old rule, with writers",
			defines:  []string{"-DBLIND_RECORD=1"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"finishes it as it is"},
		},
		// Without a policy change or a new incarnation the old rule was
		// safe: the counterexamples above need one of them.
		{name: "old rule, same policy, same table", defines: []string{"-DBLIND_RECORD=1", "-DSAME_POLICY=1", "-DRECREATE=0"}},
		// The clause that carries the new rule: a recorded version counts
		// only if the current policy removes it too.
		{
			name:     "new rule without its policy clause",
			defines:  []string{"-DPOLICY_CLAUSE=0"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"adds what is still true"},
		},
		// Finding 2: a drop and create before the run's recheck. The
		// recheck keeps a listed version removed only while its manifest
		// is the planned one, so the new table's v1 at the planned key is
		// spared; the old Refresh and Recheck (by key, by number) deleted
		// it.
		{
			name:      "drop and create before the recheck, no writer",
			defines:   []string{"-DRECREATE_MIDRUN=1", "-DWRITER=0"},
			minStates: 1000,
		},
		{
			name:     "drop and create before the recheck, the old key-only Refresh and Recheck",
			defines:  []string{"-DRECREATE_MIDRUN=1", "-DWRITER=0", "-DKEY_ONLY_REFRESH=1"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"plans with cutoff \\d: removes versions 1", "drops the table and creates it again", "rechecks: removes versions 1", "deletes the manifest of v1 \\(incarnation 2,"},
		},
		// What the model then found of finding 2: a planned version whose
		// manifest went with the drop stayed removed, and its key was
		// deleted after the new table had committed a version there
		// (-DDELETE_UNLISTED=1, the code before). The recheck now drops a
		// planned version whose manifest is not listed.
		{
			name:     "drop and create before the recheck, then a commit at a planned key, the recheck before the fix",
			defines:  []string{"-DRECREATE_MIDRUN=1", "-DDELETE_UNLISTED=1"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"drops the table and creates it again", "rechecks", "restores v\\d: v\\d", "deletes the manifest of v\\d \\(incarnation 2,"},
		},
		{
			name:    "drop and create before the recheck, with writers: holds",
			defines: []string{"-DRECREATE_MIDRUN=1", "-DNRUNS=2"},
		},
		// Finding 3: the tags are read again before each manifest batch,
		// in a request of its own; a tag committed between that read and
		// the delete is not seen, and nothing else is left (the read made
		// with the delete holds).
		{
			name:     "a tag between the batch's tag read and its delete",
			defines:  []string{"-DRACE=1", "-DRECREATE=0"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"rechecks", "reads the tags again: v\\d is not tagged", "a writer tags v\\d", "deletes the manifest of v\\d"},
		},
		{
			name:     "a tag after the recheck, the old once-only tag read",
			defines:  []string{"-DRACE=1", "-DRECREATE=0", "-DTAG_REREAD=0"},
			violated: "r1_manifest_of_removed",
			trail:    []string{"rechecks", "a writer tags v\\d", "deletes the manifest of v\\d"},
		},
		{name: "racing writers, the tags read with the delete", defines: []string{"-DRACE=1", "-DTAG_REREAD=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := verify(t, "retain.pml", tc.defines...)
			require.Contains(t, v.output, "assertion violations\t+", "assertions were not checked:\n%s", v.output)
			if tc.violated == "" {
				require.Equal(t, 0, v.errors, "retain.pml %s found a violation:\n%s", strings.Join(tc.defines, " "), v.output)
				if tc.minStates == 0 {
					tc.minStates = 100000
				}
				require.Greater(t, v.states, tc.minStates, "suspiciously small state space:\n%s", v.output)
				return
			}
			require.Greater(t, v.errors, 0, "no violation found:\n%s", v.output)
			require.Regexp(t, `assertion violated .*`+tc.violated, v.output)
			events := retainEvents(replay(t, v, "retain.pml", tc.violated, tc.defines...))
			require.Regexp(t, regexp.MustCompile(`(?s)`+strings.Join(tc.trail, ".*")), events, "the trail shows other events")
			t.Logf("the trail's events:\n%s", events)
		})
	}
}

// retainEvents keeps, of a replayed trail of retain.pml, its printf lines
// ("@ ...": what the runs and the writers did) and the failed assertion.
func retainEvents(trail string) string {
	var b strings.Builder
	for _, line := range strings.Split(trail, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "@ "):
			b.WriteString(strings.TrimPrefix(line, "@ ") + "\n")
		case strings.HasPrefix(line, "spin: text of failed assertion"):
			b.WriteString(strings.TrimPrefix(line, "spin: ") + "\n")
		}
	}
	return b.String()
}
