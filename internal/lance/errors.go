package lance

import (
	"errors"
	"fmt"
)

// ErrUnsupported marks a table the reader does not fully understand: a
// caller must never plan a deletion in it. Branch on it with errors.Is; the
// reason is in the *UnsupportedError that wraps it.
var ErrUnsupported = errors.New("unsupported")

// UnsupportedError names the table and what the reader did not understand.
type UnsupportedError struct {
	// Dir is the table directory (a key prefix ending in "/").
	Dir string
	// Reason says what was not understood, e.g. "manifest
	// _versions/5.manifest: unknown reader feature flag 512".
	Reason string
	// Bases, for a table refused for its base paths (a shallow clone),
	// are the files it reads through them, by location: another table of
	// the root must keep them (bases.go).
	Bases []BaseRef
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Dir, ErrUnsupported, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// unsupportedf is a format error of one file; ReadTable turns it into an
// *UnsupportedError naming the table.
func unsupportedf(format string, args ...any) error {
	return &formatError{msg: fmt.Sprintf(format, args...)}
}

// formatError is a reason to refuse a table, before the table is named.
type formatError struct {
	msg   string
	bases []BaseRef
}

func (e *formatError) Error() string { return e.msg }
