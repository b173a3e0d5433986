package worker

import (
	"errors"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// This file owns the one table from the errors of a table's run to the
// outcome vocabulary, for purges and version retention alike: a journal
// that refused an intent is `ledger` for both, a lost lease `lease_lost`, a
// hold `held`. Each kind of run maps its own results (not due, nothing to
// do) and the errors only it can meet before asking here; what this table
// does not know is `io`.

// tableErrors are the errors both kinds of run meet, in order of
// precedence: the first that matches decides.
var tableErrors = []struct {
	is     func(error) bool
	action outcome.Action
	reason outcome.Reason
	// lead, when set, opens the detail (the run names itself: "purge",
	// "version retention").
	lead func(run string) string
}{
	// Before a lost lease: a root that moved also fails the lease's renewal
	// and the guard, and the move is what an operator must know.
	{isErr(objstore.ErrRootChanged), outcome.Failed, outcome.ReasonRootChanged, nil},
	// Work stopped because the lease may be gone is a failure, whatever
	// the request it cut short said.
	{isErr(lock.ErrLost), outcome.Failed, outcome.ReasonLeaseLost, nil},
	// After a purge's commit, what stopped it left a partly destroyed
	// table: a failure whatever caused it.
	{isErr(lifecycle.ErrStuck), outcome.Failed, outcome.ReasonStuck, nil},
	{isErr(lifecycle.ErrUndeletableKey), outcome.Failed, outcome.ReasonInvalidKey, nil},
	{isErr(ledger.ErrJournal), outcome.Failed, outcome.ReasonLedger, func(run string) string {
		return "the audit journal could not record the " + run + "'s intent, so nothing was deleted: "
	}},
	{isErr(lifecycle.ErrHeld), outcome.Held, outcome.ReasonHeld, nil},
	{isErr(lifecycle.ErrPaused), outcome.Skipped, outcome.ReasonPaused, nil},
	{isErr(lifecycle.ErrShortTTL), outcome.Skipped, outcome.ReasonShortTTL, nil},
	{isErr(lifecycle.ErrNotATable), outcome.Failed, outcome.ReasonNotATable, nil},
	{isErr(lance.ErrUnsupported), outcome.Skipped, outcome.ReasonUnsupported, nil},
	{isErr(lifecycle.ErrConflict), outcome.Conflict, outcome.ReasonConflict, nil},
	{isErr(lifecycle.ErrLocked), outcome.Skipped, outcome.ReasonLocked, nil},
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// tableErrorOutcome maps err of a run ("purge", "version retention") by
// tableErrors; ok is false for an error it does not know.
func tableErrorOutcome(run string, err error) (action outcome.Action, reason outcome.Reason, detail string, ok bool) {
	for _, e := range tableErrors {
		if !e.is(err) {
			continue
		}
		detail = err.Error()
		var rc *objstore.RootChangedError
		if e.reason == outcome.ReasonRootChanged && errors.As(err, &rc) {
			detail = rc.Error()
		}
		if e.lead != nil {
			detail = e.lead(run) + detail
		}
		return e.action, e.reason, detail, true
	}
	return "", "", "", false
}
