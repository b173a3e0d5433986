package reaper

import (
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
)

// The error types below carry the details of an error for errors.As. Each
// wraps the error as it was returned, so its text is unchanged and
// errors.Is against the sentinels still answers; every method of this
// package returns them (exported does).

// NotDueError says when a table becomes purgeable (errors.Is
// ErrNotPurgeable).
type NotDueError struct {
	Name       string
	PurgeAfter time.Time
	err        error
}

func (e *NotDueError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("table %q is not due until %s", e.Name, e.PurgeAfter.UTC().Format(time.RFC3339))
}

// Unwrap returns the error as it was returned.
func (e *NotDueError) Unwrap() error { return e.err }

// Is reports ErrNotPurgeable.
func (e *NotDueError) Is(target error) bool { return target == ErrNotPurgeable }

// ConflictError says why a purge refused a table written after its drop,
// or whose marker changed (errors.Is ErrConflict). Nothing was deleted.
type ConflictError struct {
	Name   string
	Reason string
	err    error
}

func (e *ConflictError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("conflict: table %q: %s", e.Name, e.Reason)
}

// Unwrap returns the error as it was returned.
func (e *ConflictError) Unwrap() error { return e.err }

// Is reports ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// StuckError says why a committed purge cannot finish and what a person
// must do (errors.Is ErrStuck).
type StuckError struct {
	Name string
	// Reason is what stopped it; Fix what a person does about it.
	Reason string
	Fix    string
	err    error
}

func (e *StuckError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("purge of table %q cannot finish: %s; %s", e.Name, e.Reason, e.Fix)
}

// Unwrap returns the error as it was returned.
func (e *StuckError) Unwrap() error { return e.err }

// Is reports ErrStuck.
func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// LockedError names the holder when a table's lease is taken (errors.Is
// ErrLocked).
type LockedError struct {
	// Key is the lease object, <name>.reaper-lock.
	Key    string
	Holder LeaseInfo
	// TakeoverAt is when, by the store's clock, the lease may be taken over
	// if its holder does not renew it; see Never.
	TakeoverAt time.Time
	never      bool
	err        error
}

// Never reports a lease that is never taken over (a TTL of centuries): an
// operator deletes it if no process holds it.
func (e *LockedError) Never() bool { return e.never }

func (e *LockedError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("lock %q is held by %s (generation %d)", e.Key, e.Holder.Owner, e.Holder.Generation)
}

// Unwrap returns the error as it was returned.
func (e *LockedError) Unwrap() error { return e.err }

// Is reports ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// exported returns err with this package's error types in front of the
// lifecycle engine's, for errors.As; its text and its errors.Is answers
// are unchanged.
func exported(err error) error {
	if err == nil {
		return nil
	}
	var (
		nd  *lifecycle.NotDueError
		ce  *lifecycle.ConflictError
		se  *lifecycle.StuckError
		le  *lock.LockedError
		pnd *NotDueError
		pce *ConflictError
		pse *StuckError
		ple *LockedError
	)
	if errors.As(err, &le) && !errors.As(err, &ple) {
		err = &LockedError{Key: le.Key, Holder: leaseOf(le.Holder), TakeoverAt: le.TakeoverAt, never: le.Never(), err: err}
	}
	if errors.As(err, &se) && !errors.As(err, &pse) {
		err = &StuckError{Name: se.Name, Reason: se.Reason, Fix: se.Fix, err: err}
	}
	if errors.As(err, &ce) && !errors.As(err, &pce) {
		err = &ConflictError{Name: ce.Name, Reason: ce.Reason, err: err}
	}
	if errors.As(err, &nd) && !errors.As(err, &pnd) {
		err = &NotDueError{Name: nd.Name, PurgeAfter: nd.PurgeAfter, err: err}
	}
	return err
}
