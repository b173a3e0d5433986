package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
)

// purgeOptions are the flags and arguments of `reaper purge`.
type purgeOptions struct {
	storeOptions
	DryRun bool
	// Output is table or json.
	Output string
	Names  []string
}

func (o *purgeOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	fs.BoolVar(&o.DryRun, "dry-run", false, "delete nothing; report what would be purged, with object and byte counts")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
}

func newPurgeCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := purgeOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "purge --root URI [--dry-run] [-o table|json] [NAME...]",
		Short: "Reclaim soft-deleted tables whose TTL has passed (one pass)",
		Long: `Make one pass over the root (or over the named tables): every soft-deleted
table whose TTL has passed is purged, oldest first, in a crash-safe order
(manifests first, the marker last) under its lifecycle lease. A marker
whose data is already gone (orphan_marker) is removed.

Skipped (kept, retried by a later pass): tables not due yet, tables whose
lease another process holds (locked), and conflicts, where a file was
written after the drop (a writer revived the table) and nothing is deleted.
Failed (exit status 1): invalid or future-dated markers, I/O errors, and
named tables that are live or not found.

JSON (-o json): {"purged":[{"name","objects","bytes"}],
"skipped":[{"name","reason"}], "failed":[{"name","error"}]}, plus
"dry_run":true with --dry-run.

On SIGINT/SIGTERM the current table is finished and no new one is started;
a second signal aborts it (a later pass finishes the job).

Exit status: 0 when nothing failed, 1 when any table failed, 2 on usage errors.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runPurge(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runPurge runs one purge pass and prints its report.
func runPurge(ctx context.Context, o purgeOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	if err := validateNames(o.Names); err != nil {
		return err
	}
	ns, log, err := o.open(ctx)
	if err != nil {
		return err
	}
	rep, err := purgePass(ctx, ns, log, o.now(), o.DryRun, o.Names)
	if err != nil {
		return err
	}
	if o.Output == formatJSON {
		err = writeJSON(stdout, rep)
	} else {
		err = renderPurgeTable(stdout, rep)
	}
	if err != nil {
		return err
	}
	return rep.err()
}

// err is the pass's verdict: a failedError when any table failed.
func (r *purgeReport) err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return &failedError{op: "purge", failed: len(r.Failed), all: len(r.Purged) + len(r.Skipped) + len(r.Failed)}
}

// purgePass plans at now and purges each due table, oldest first. Only an
// error that stops the whole pass (the root cannot be listed, the run was
// interrupted) is returned; table errors land in the report.
func purgePass(ctx context.Context, ns *reaper.Namespace, log *slog.Logger, now time.Time, dryRun bool, names []string) (*purgeReport, error) {
	plan, err := ns.PlanPurge(ctx, now, names...)
	if err != nil {
		return nil, fmt.Errorf("plan purge of %s: %w", ns.URI(), err)
	}
	rep := newPurgeReport(dryRun)
	rep.addUnplanned(plan)
	for _, s := range plan.Invalid {
		rep.fail(s.Name, invalidMessage(s))
	}
	for _, s := range plan.Held {
		rep.skip(s.Name, "held: legal hold ("+s.Hold.Reason+"); 'reaper release' lifts it")
	}
	for _, s := range plan.Busy {
		rep.skip(s.Name, "locked: "+leaseHolder(s.Lease))
	}
	for _, s := range plan.NotDue {
		rep.skip(s.Name, "not due until "+formatTime(s.PurgeAfter))
	}
	for i, s := range plan.Due {
		if draining(ctx) {
			left := len(plan.Due) - i
			return nil, fmt.Errorf("purge of %s interrupted: %d due table(s) not started; run purge again to finish", ns.URI(), left)
		}
		res, err := ns.Purge(ctx, s.Name, reaper.PurgeOptions{DryRun: dryRun})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("purge of %s aborted during %s (a later pass finishes it): %w", ns.URI(), s.Name, err)
			}
			rep.purgeError(s.Name, err)
			continue
		}
		log.Debug("table purged", "table", s.Name, "outcome", res.Outcome, "objects", res.Objects, "bytes", res.Bytes)
		rep.Purged = append(rep.Purged, purgedJSON{Name: s.Name, Objects: res.Objects, Bytes: res.Bytes})
	}
	sortByName(rep.Skipped, func(s skippedJSON) string { return s.Name })
	sortByName(rep.Failed, func(f failedJSON) string { return f.Name })
	return rep, nil
}

// addUnplanned reports named tables without a marker: live or unknown.
func (r *purgeReport) addUnplanned(plan reaper.Plan) {
	for _, s := range plan.Unpurgeable {
		if s.State == reaper.StateExists {
			r.fail(s.Name, fmt.Sprintf("table is live (no marker %s.deleted): drop it first with 'reaper drop'", s.Name))
		} else {
			r.fail(s.Name, "table not found: no data and no marker"+lanceSuffixHint(s.Name))
		}
	}
}

// purgeError sorts one failed purge into skipped or failed.
func (r *purgeReport) purgeError(name string, err error) {
	var nd *reaper.NotDueError
	var ce *reaper.ConflictError
	var le *reaper.LockedError
	switch {
	case errors.As(err, &nd):
		r.skip(name, "not due until "+formatTime(nd.PurgeAfter))
	case errors.As(err, &ce):
		r.skip(name, ce.Error())
	case errors.Is(err, reaper.ErrConflict):
		r.skip(name, "conflict: "+err.Error())
	case errors.As(err, &le):
		r.skip(name, "locked: "+leaseHolder(&le.Holder))
	case errors.Is(err, reaper.ErrHeld):
		r.skip(name, "held: "+err.Error())
	case errors.Is(err, reaper.ErrLocked):
		r.skip(name, "locked: "+err.Error())
	default:
		r.fail(name, err.Error())
	}
}

func (r *purgeReport) skip(name, reason string) {
	r.Skipped = append(r.Skipped, skippedJSON{Name: name, Reason: reason})
}

func (r *purgeReport) fail(name, msg string) {
	r.Failed = append(r.Failed, failedJSON{Name: name, Error: msg})
}

// invalidMessage explains an invalid or future-dated marker.
func invalidMessage(s reaper.TableStatus) string {
	if s.State == reaper.StateInvalidMarker {
		return fmt.Sprintf("%s.deleted: %s; it is never purged: fix it, or remove it with 'reaper revive' to keep the table", s.Name, s.Problem)
	}
	return "future-dated marker: " + s.Problem
}

// leaseHolder names who holds a lease and until when.
func leaseHolder(l *reaper.LeaseInfo) string {
	if l == nil {
		return "another process holds the table's lease"
	}
	if l.ExpiresAt.IsZero() {
		return l.Owner
	}
	return fmt.Sprintf("lease held by %s until %s", l.Owner, formatTime(l.ExpiresAt))
}

func sortByName[T any](s []T, name func(T) string) {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(name(a), name(b)) })
}
