package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// This file owns what happens when a purge that has committed cannot
// finish. Before its commit a purge that meets a conflict has deleted
// nothing, so a skip is honest and a later pass looks again. After it, the
// table is partly destroyed: its manifests are gone and LanceDB cannot open
// it. Anything that stops such a purge (a marker or commit removed or
// rewritten by hand, a file written into the table, an object the store
// cannot delete) is a failure that says what state the table is in and
// what a person must do, counted and alerted; the commit records why
// (Commit.Stuck), so status shows the table as stuck on every later pass,
// until a purge finishes it.

// ErrStuck: a committed purge cannot finish without a person.
var ErrStuck = errors.New("purge cannot finish")

// StuckError is a committed purge that stopped on something only a person
// can mend. It is not a conflict: it is a failure.
type StuckError struct {
	Name string
	// Reason is what stopped it; Fix what a person does about it.
	Reason string
	Fix    string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("purge of table %q cannot finish: %s; the table is partially purged (its manifests are gone: LanceDB cannot open it, and it is never revived); %s",
		e.Name, e.Reason, e.Fix)
}

func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// Fixes of a stuck purge, by what stopped it.
const (
	fixMarker = "restore the table from a backup, or drop it again ('reaper drop') and purge it to finish it"
	fixCommit = "the next purge walks the table again, commits and finishes it"
	fixWriter = "a writer wrote into a table being destroyed: stop it, delete what it wrote (or restore the table from a backup), then run purge again to finish the table"
	fixKey    = "delete that object by hand, then run purge again to finish the table"
)

// stuckAfterCommit turns a refusal met by a committed purge into a
// StuckError; any other error is returned as it is.
func stuckAfterCommit(name string, err error) error {
	var ce *ConflictError
	var ke *UndeletableKeyError
	switch {
	case errors.As(err, &ke):
		return &StuckError{Name: name, Reason: ke.reason(), Fix: fixKey}
	case errors.As(err, &ce):
		return &StuckError{Name: name, Reason: ce.Reason, Fix: fixWriter}
	}
	return err
}

// noteStuck records why the purge of name stopped in its commit, under the
// lease (ctx is its fenced context), so status can say so: only when the
// commit is still the one this purge holds (etag). Best effort: the
// failure itself is what the pass reports.
func (ns *Namespace) noteStuck(ctx context.Context, name, etag string, stuck *StuckError) {
	if etag == "" {
		return
	}
	body, obj, err := ns.store.Get(ctx, CommitKey(name), MaxControlBytes)
	if err != nil || obj.ETag != etag {
		return
	}
	c, err := parseCommit(body)
	if err != nil {
		return
	}
	now, err := ns.storeNow(ctx)
	if err != nil {
		now = ns.opts.Now()
	}
	c.Stuck, c.StuckAtMs = stuck.Error(), now.UnixMilli()
	if _, err := ns.store.PutIfMatch(ctx, CommitKey(name), encodeCommit(c), etag); err != nil {
		ns.log.WarnContext(ctx, "could not record in the purge commit why the purge stopped", "table", name, "error", err)
	}
}

// stuckAt is when a purge recorded the commit as stuck.
func (c Commit) stuckAt() time.Time { return time.UnixMilli(c.StuckAtMs) }
