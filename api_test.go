package reaper

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/worker"
)

// This file keeps the public API readable with go doc: every type is
// spelled out here (no alias of an internal type, whose fields go doc
// does not show), carries every field of the engine's type it stands for,
// and converts to and from it without loss.

// TestNoAliasesOfInternalTypes: `type X = internal.Y` shows no fields in
// go doc; the package declares none.
func TestNoAliasesOfInternalTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Assign.IsValid() && ts.Name.IsExported() {
				t.Errorf("%s: type %s is an alias: spell it out so go doc shows its fields", fset.Position(ts.Pos()), ts.Name.Name)
			}
			return true
		})
	}
}

// publicOf pairs each public type with the engine's type it stands for.
var publicOf = []struct {
	public, internal any
	// internalOnly are the engine's fields callers never see, with why.
	internalOnly map[string]string
}{
	{TableStatus{}, lifecycle.TableStatus{}, nil},
	{Marker{}, lifecycle.Marker{}, nil},
	{Hold{}, lifecycle.Hold{}, nil},
	{LeaseInfo{}, lock.Info{}, nil},
	{PurgeCommit{}, lifecycle.Commit{}, nil},
	{Plan{}, lifecycle.Plan{}, nil},
	{PurgeOptions{}, lifecycle.PurgeOptions{}, nil},
	{PurgeResult{}, lifecycle.PurgeResult{}, nil},
	{NotDueError{}, lifecycle.NotDueError{}, nil},
	{ConflictError{}, lifecycle.ConflictError{}, nil},
	{StuckError{}, lifecycle.StuckError{}, nil},
	{LockedError{}, lock.LockedError{}, nil},
	{PassReport{}, worker.Report{}, nil},
	{RootReport{}, worker.RootReport{}, nil},
	{Decision{}, worker.Decision{}, nil},
	{PlanSummary{}, worker.PlanSummary{}, nil},
	{Totals{}, worker.Totals{}, nil},
	{RetentionSummary{}, lifecycle.RetentionSummary{}, nil},
}

// TestPublicTypesCarryEveryField: a field the engine adds to a type the
// API hands out fails here until the public type has it too (or it is
// listed as internal only), and no exported field's type is from an
// internal package.
func TestPublicTypesCarryEveryField(t *testing.T) {
	for _, p := range publicOf {
		pub, in := reflect.TypeOf(p.public), reflect.TypeOf(p.internal)
		for f := range in.Fields() {
			if !f.IsExported() || p.internalOnly[f.Name] != "" {
				continue
			}
			_, ok := pub.FieldByName(f.Name)
			require.True(t, ok, "%s has no field %s of %s: add it (or list it as internal only, with why)", pub, f.Name, in)
		}
		for f := range pub.Fields() {
			if f.IsExported() {
				require.NotContains(t, internalTypes(f.Type), "/internal/", "%s.%s is of an internal type: go doc cannot show it", pub, f.Name)
			}
		}
	}
}

// internalTypes names the packages of t and the types it is made of.
func internalTypes(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return t.PkgPath() + " " + internalTypes(t.Elem())
	case reflect.Map:
		return internalTypes(t.Key()) + " " + internalTypes(t.Elem())
	case reflect.Func:
		var s []string
		for p := range t.Ins() {
			s = append(s, internalTypes(p))
		}
		for p := range t.Outs() {
			s = append(s, internalTypes(p))
		}
		return strings.Join(s, " ")
	}
	return t.PkgPath()
}

// TestConstantsAreTheEngines: the spelled-out constants hold the engine's
// values.
func TestConstantsAreTheEngines(t *testing.T) {
	require.Equal(t, lifecycle.DefaultTTL, DefaultTTL)
	require.Equal(t, lifecycle.DefaultSkewAllowance, DefaultSkewAllowance)
	require.Equal(t, lifecycle.DefaultLeaseTTL, DefaultLeaseTTL)
	require.Equal(t, lifecycle.DefaultMinTTL, DefaultMinTTL)
	for pub, in := range map[State]lifecycle.State{
		StateExists: lifecycle.StateExists, StateSoftDeleted: lifecycle.StateSoftDeleted, StatePurging: lifecycle.StatePurging,
		StatePartiallyPurged: lifecycle.StatePartiallyPurged, StateStuck: lifecycle.StateStuck, StateNotATable: lifecycle.StateNotATable,
		StateOrphanMarker: lifecycle.StateOrphanMarker, StateInvalidMarker: lifecycle.StateInvalidMarker,
		StateUnreadable: lifecycle.StateUnreadable, StateNotFound: lifecycle.StateNotFound,
		StateDeregistered: lifecycle.StateDeregistered, StateCatalog: lifecycle.StateCatalog,
	} {
		require.Equal(t, string(in), string(pub))
	}
	for pub, in := range map[Outcome]lifecycle.Outcome{
		OutcomePurged: lifecycle.OutcomePurged, OutcomeOrphanMarker: lifecycle.OutcomeOrphanMarker,
		OutcomeDryRun: lifecycle.OutcomeDryRun, OutcomePartial: lifecycle.OutcomePartial,
	} {
		require.Equal(t, string(in), string(pub))
	}
	actions := []Action{ActionPurged, ActionSkipped, ActionDryRun, ActionFailed, ActionConflict, ActionHeld, ActionRefused, ActionCleaned}
	require.Len(t, actions, len(outcome.Actions()))
	for i, a := range outcome.Actions() {
		require.Equal(t, string(a), string(actions[i]))
	}
}

// TestStatusRoundTrip: a status converts to the public type and back
// without loss (PurgeOptions.Planned hands it back to the engine).
func TestStatusRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_767_225_600_000).UTC()
	in := lifecycle.TableStatus{Name: "t", State: lifecycle.StatePurging, HasData: true,
		Marker: &lifecycle.Marker{DeletedAtMs: 1, TTLMs: 2, HasTTL: true}, TTL: time.Hour, DeletedAt: at, PurgeAfter: at.Add(time.Hour),
		MarkerModified: at, MarkerETag: `"e"`, Problem: "p", FutureDated: true,
		Lease:           &lock.Info{Owner: "o", Token: "k", Generation: 3, TTL: time.Minute, AcquiredAt: at, RenewedAt: at, ExpiresAt: at, Modified: at},
		LeaseTakeoverAt: at, Hold: &lifecycle.Hold{Reason: "r", HeldBy: "b", HeldAtMs: 4, Folder: true},
		Commit: &lifecycle.Commit{Owner: "o", Generation: 5, CommittedAtMs: 6, Marker: "m", Stuck: "s", StuckAtMs: 7}, RetainRecord: true}
	require.Equal(t, in, statusOf(in).internal())
	// Every field of the test value is set, so a field added later and
	// left out of the conversion fails the comparison above.
	for f := range reflect.TypeOf(in).Fields() {
		require.False(t, reflect.ValueOf(in).FieldByIndex(f.Index).IsZero(), "set %s in the test value", f.Name)
	}
}

// TestErrorsAreExported: what the engine returns reaches callers as this
// package's error types for errors.As, with its text and its errors.Is
// answers unchanged, once however often it is exported.
func TestErrorsAreExported(t *testing.T) {
	at := time.UnixMilli(1_767_225_600_000)
	for _, tc := range []struct {
		inner    error
		sentinel error
		check    func(t *testing.T, err error)
	}{
		{&lifecycle.NotDueError{Name: "t", PurgeAfter: at}, ErrNotPurgeable, func(t *testing.T, err error) {
			var e *NotDueError
			require.ErrorAs(t, err, &e)
			require.Equal(t, NotDueError{Name: "t", PurgeAfter: at, err: e.err}, *e)
		}},
		{&lifecycle.ConflictError{Name: "t", Reason: "why"}, ErrConflict, func(t *testing.T, err error) {
			var e *ConflictError
			require.ErrorAs(t, err, &e)
			require.Equal(t, "why", e.Reason)
		}},
		{&lifecycle.StuckError{Name: "t", Reason: "why", Fix: "fix"}, ErrStuck, func(t *testing.T, err error) {
			var e *StuckError
			require.ErrorAs(t, err, &e)
			require.Equal(t, "fix", e.Fix)
		}},
		{&lock.LockedError{Key: "t.reaper-lock", Holder: lock.Info{Owner: "o", Modified: at}, TakeoverAt: at.Add(time.Minute)}, ErrLocked, func(t *testing.T, err error) {
			var e *LockedError
			require.ErrorAs(t, err, &e)
			require.Equal(t, "o", e.Holder.Owner)
			require.False(t, e.Never())
		}},
	} {
		inner := fmt.Errorf("purge %q: %w", "t", tc.inner)
		err := exported(exported(inner))
		require.Equal(t, inner.Error(), err.Error())
		require.ErrorIs(t, err, tc.sentinel)
		tc.check(t, err)
		require.Same(t, err, exported(err), "exported twice is exported once")
		require.NotSame(t, inner, err)
		require.Same(t, tc.inner, errors.Unwrap(errors.Unwrap(err)), "the engine's error is still in the chain")
	}
	require.NoError(t, exported(nil))
}

// TestMethodsOfTheEngine: the public types keep the methods the engine's
// types had when they were aliases (source compatibility), and answer as
// the engine does.
func TestMethodsOfTheEngine(t *testing.T) {
	for _, p := range publicOf {
		pub, in := reflect.TypeOf(p.public), reflect.TypeOf(p.internal)
		for _, typ := range []reflect.Type{in, reflect.PointerTo(in)} {
			for m := range typ.Methods() {
				if m.Name == "Error" || m.Name == "Unwrap" || m.Name == "Is" {
					continue // the error types' own, checked by TestErrorsAreExported
				}
				_, ok := reflect.PointerTo(pub).MethodByName(m.Name)
				require.True(t, ok, "%s lost method %s of %s", pub, m.Name, typ)
			}
		}
	}
	at := time.UnixMilli(1_767_225_600_000)
	m := lifecycle.Marker{DeletedAtMs: at.UnixMilli(), TTLMs: 1000, HasTTL: true}
	require.Equal(t, m.PurgeAfter(time.Hour), markerOf(m).PurgeAfter(time.Hour))
	require.Equal(t, m.PurgeAfterMs(time.Hour), markerOf(m).PurgeAfterMs(time.Hour))
	l := lock.Info{TTL: time.Minute}
	require.Equal(t, l.TakeoverAt(at, time.Second), leaseOf(l).TakeoverAt(at, time.Second))
	require.Equal(t, l.TakeoverNever(at, time.Second), leaseOf(l).TakeoverNever(at, time.Second))
}
