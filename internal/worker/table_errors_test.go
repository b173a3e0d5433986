package worker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// A purge and a version-retention run that stop for the same reason report
// it with the same action and reason: one table maps both (a journal that
// refused the intent used to be `ledger` for a purge and `io` for
// retention).
func TestPurgeAndRetentionShareTheirErrorOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err    error
		action outcome.Action
		reason outcome.Reason
	}{
		{ledger.ErrJournal, outcome.Failed, outcome.ReasonLedger},
		{lock.ErrLost, outcome.Failed, outcome.ReasonLeaseLost},
		{objstore.ErrRootChanged, outcome.Failed, outcome.ReasonRootChanged},
		{lifecycle.ErrHeld, outcome.Held, outcome.ReasonHeld},
		{lifecycle.ErrPaused, outcome.Skipped, outcome.ReasonPaused},
		{lifecycle.ErrShortTTL, outcome.Skipped, outcome.ReasonShortTTL},
		{lifecycle.ErrLocked, outcome.Skipped, outcome.ReasonLocked},
		{lifecycle.ErrConflict, outcome.Conflict, outcome.ReasonConflict},
		{lifecycle.ErrNotATable, outcome.Failed, outcome.ReasonNotATable},
		{lifecycle.ErrUndeletableKey, outcome.Failed, outcome.ReasonInvalidKey},
		{lance.ErrUnsupported, outcome.Skipped, outcome.ReasonUnsupported},
	} {
		t.Run(string(tc.reason), func(t *testing.T) {
			err := fmt.Errorf("table %q: %w", "t", tc.err)
			pa, pr, _ := classify(lifecycle.PurgeResult{}, err)
			ra, rr, detail := classifyRetain(lifecycle.RetainResult{}, err)
			require.Equal(t, tc.action, pa, "purge")
			require.Equal(t, tc.reason, pr, "purge")
			require.Equal(t, tc.action, ra, "retention")
			require.Equal(t, tc.reason, rr, "retention")
			require.Contains(t, detail, "version retention: ")
		})
	}
}
