package outcome

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/OUTCOMES.md is where operators look words up: it must name every one.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/OUTCOMES.md")
	require.NoError(t, err)
	var words []string
	for _, a := range Actions() {
		words = append(words, string(a))
	}
	for _, r := range append(append(append(append(append(SkipReasons(), FailureReasons()...), RefusalReasons()...), LedgerReasons()...), RetentionReasons()...),
		ReasonDue, ReasonOrphanMarker, ReasonConflict) {
		words = append(words, string(r))
	}
	for _, r := range Results() {
		words = append(words, string(r))
	}
	for _, l := range Leases() {
		words = append(words, string(l))
	}
	for _, w := range words {
		require.Contains(t, string(doc), "`"+w+"`", "docs/OUTCOMES.md does not name %q", w)
	}
}

// A word means one thing: no reason is both a skip and a failure.
func TestListsDisjoint(t *testing.T) {
	seen := map[Reason]string{}
	for name, l := range map[string][]Reason{"skip": SkipReasons(), "failure": FailureReasons(), "ledger-only": LedgerReasons(), "retention": RetentionReasons()} {
		for _, r := range l {
			require.NotContains(t, seen, r, "%s is a %s reason and a %s reason", r, seen[r], name)
			seen[r] = name
		}
	}
}
