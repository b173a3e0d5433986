package lifecycle

import (
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: the name has neither data nor a marker.
	ErrNotFound = errors.New("table not found")
	// ErrAlreadyDeleted: Drop found a marker; the marker was left untouched.
	ErrAlreadyDeleted = errors.New("table already soft-deleted")
	// ErrNotSoftDeleted: Revive or Purge of a live table (data, no marker).
	ErrNotSoftDeleted = errors.New("table is not soft-deleted")
	// ErrNotPurgeable: the table may not be purged now (not due, future-dated
	// marker, live table).
	ErrNotPurgeable = errors.New("table not purgeable")
	// ErrInvalidMarker: the marker does not parse or holds a negative value;
	// its table is never deleted.
	ErrInvalidMarker = errors.New("invalid marker")
	// ErrConflict: something wrote into the table or its marker after the
	// drop; the purge touched nothing (or stopped before the marker).
	ErrConflict = errors.New("conflict")
	// ErrInvalidName: the name is not a single path segment.
	ErrInvalidName = errors.New("invalid table name")
	// ErrNotATable: <name>.lance is a symbolic link or a file, not a
	// directory; reaper never drops, revives, purges or enters it.
	ErrNotATable = errors.New("not a table")
	// ErrLocked: another process holds the table's lifecycle lease.
	ErrLocked = lock.ErrLocked
	// ErrUndeletableKey: the table holds an object whose name reaper's
	// stores refuse to delete (an empty, "." or ".." path segment, which
	// S3, GCS and Azure accept): a purge refuses the table before its
	// commit, naming the object.
	ErrUndeletableKey = errors.New("object reaper cannot delete")
)

// UndeletableKeyError names the object a purge found it could not delete.
type UndeletableKeyError struct {
	Name string
	Key  string
	Err  error
}

func (e *UndeletableKeyError) Error() string {
	return fmt.Sprintf("table %q %s; nothing was deleted: delete it by hand (the store accepts the name), then purge again", e.Name, e.reason())
}

func (e *UndeletableKeyError) reason() string {
	return fmt.Sprintf("holds %q, which reaper cannot delete safely (%v)", e.Key, e.Err)
}

func (e *UndeletableKeyError) Is(target error) bool { return target == ErrUndeletableKey }

// NotDueError says when a soft-deleted table becomes purgeable.
type NotDueError struct {
	Name       string
	PurgeAfter time.Time
}

func (e *NotDueError) Error() string {
	return fmt.Sprintf("table %q is not due until %s", e.Name, e.PurgeAfter.UTC().Format(time.RFC3339))
}

func (e *NotDueError) Is(target error) bool { return target == ErrNotPurgeable }

// ConflictError names what the identity fence or the marker re-check found.
type ConflictError struct {
	Name   string
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict: table %q: %s", e.Name, e.Reason)
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
