package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lance-reaper/reaper/internal/objstore"
	"strings"
)

// usageError marks a usage or configuration error: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error; %w verbs wrap as with fmt.Errorf.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// asUsage marks err (which already names its input) as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// storeError turns a store error the operator fixes in the configuration
// (objstore.ErrMisconfigured: credentials, region, endpoint, a missing
// bucket or directory, access denied) into one usage-error line naming the
// root and what to set (exit 2); other errors pass unchanged.
func storeError(root string, err error) error {
	var me *objstore.MisconfiguredError
	if !errors.As(err, &me) {
		return err
	}
	return &usageError{err: fmt.Errorf("%s: %w", root, me)}
}

// failedError says some tables failed; each failure was already printed.
type failedError struct {
	op          string
	failed, all int
	msg         string // replaces the count message when set
}

func (e *failedError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("%s: %d of %d table(s) failed; see the per-table lines above", e.op, e.failed, e.all)
}

// refusedError says a pass failed nothing but a safety rail refused roots:
// exit status 3.
type refusedError struct{ roots []string }

func (e *refusedError) Error() string {
	return fmt.Sprintf("purge: %d root(s) refused by a safety rail, their due tables kept: %s; see the lines above",
		len(e.roots), strings.Join(e.roots, ", "))
}

// drainKey carries the channel closed on the first interrupt signal.
type drainKey struct{}

func withDrain(ctx context.Context, ch <-chan struct{}) context.Context {
	return context.WithValue(ctx, drainKey{}, ch)
}

// draining reports whether the first interrupt arrived: finish the current
// table, start no new one. Contexts without the value never drain.
func draining(ctx context.Context) bool {
	ch, _ := ctx.Value(drainKey{}).(<-chan struct{})
	if ch == nil {
		return ctx.Err() != nil
	}
	select {
	case <-ch:
		return true
	default:
		return ctx.Err() != nil
	}
}

// drainDone returns the channel closed on the first interrupt (nil when the
// context carries none: such a run only stops on cancellation).
func drainDone(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(drainKey{}).(<-chan struct{})
	return ch
}

// eachName applies fn to every name in order, prints "<name>: <line>" for
// each (fn's success line, or its failure explained by explain), and
// returns a failedError naming op when any failed: the shape of drop,
// revive, hold and release; quiet leaves out the success lines. A misconfigured store stops at once with its
// error (pass it to storeError).
func eachName(stdout io.Writer, quiet bool, op string, names []string, fn func(name string) (string, error), explain func(name string, err error) string) error {
	failed := 0
	for _, name := range names {
		line, err := fn(name)
		if errors.Is(err, objstore.ErrMisconfigured) {
			return err // the next name would fail alike: say what to set
		}
		if err != nil {
			failed++
			line = explain(name, err)
		} else if quiet {
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", displayName(name), safeText(line))
	}
	if failed > 0 {
		return &failedError{op: op, failed: failed, all: len(names)}
	}
	return nil
}
