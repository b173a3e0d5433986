package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/worker"
)

// purgeOptions are the flags and arguments of `reaper purge`.
type purgeOptions struct {
	storeOptions
	passFlags
	DryRun bool
	// Progress prints each table's progress on stderr.
	Progress bool
	// Output is table or json.
	Output string
	Names  []string
}

func (o *purgeOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
	o.passFlags.register(fs)
	fs.BoolVar(&o.DryRun, "dry-run", false, "delete nothing; report what would be purged, with object and byte counts")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
	fs.BoolVar(&o.Progress, "progress", false, "print each table's progress on stderr while it is purged or its old versions are removed: objects done of the total, rate and ETA (a line a second per table)")
}

func newPurgeCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := purgeOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "purge (--root URI | --config FILE) [--dry-run] [-o table|json] [NAME...]",
		Short: "Reclaim soft-deleted tables whose TTL has passed (one pass)",
		Long: fmt.Sprintf(`Make one pass over the root (or over the named tables): every soft-deleted
table whose TTL has passed is purged, oldest first, in a crash-safe order
(manifests first, the marker last) under its lifecycle lease. A marker
whose data is already gone (orphan_marker) is removed.

Skipped (kept, retried by a later pass): tables not due yet, tables whose
lease another process holds (locked), and conflicts, where a file was
written after the drop (a writer revived the table) and nothing is deleted.
Failed (exit status 1): invalid or future-dated markers, I/O errors, and
named tables that are live or not found.

JSON (-o json): {"purged":[{"name","objects","bytes"}],
"skipped":[{"name","action","code","reason"}], "failed":[{"name","code","error"}]},
plus "dry_run":true with --dry-run. action and code are the words of the
audit ledger and the metric labels (skipped, held, conflict, refused;
not_due, locked, shutdown, ...); reason and error say it for people.

With --config the pass covers every root of the configuration (discovery
patterns, sharding, safety rails and limits included): the same pass the
daemon ('reaper run') schedules, for a Kubernetes CronJob. --set KEY=VALUE
overrides one configuration key; flags beat REAPER_* environment variables,
which beat the file. Safety rails apply here too: a marker whose TTL is
below safety.min_ttl (%s) is skipped unless --allow-short-ttl.

Metrics of the pass can be pushed to a Pushgateway (--pushgateway URL) or
written for the node-exporter textfile collector (--textfile PATH.prom).

On SIGINT/SIGTERM the current table is finished and no new one is started;
a second signal aborts it (a later pass finishes the job).

With audit.location set, a journal record of each purge is written before
it commits (a purge whose record cannot be written stops, nothing deleted),
and the pass's ledger file when it ends; a failed ledger write fails the
pass ("ledger_errors" in the JSON).

Exit status (the pass's result is in the "pass finished" log line and
reaper_passes_total{result}):
  0  nothing failed and nothing was refused (result success)
  1  a table or root failed, root discovery was incomplete, the pass was
     interrupted, an audit ledger write failed, or the metrics could not
     be pushed or written (result partial, failed or interrupted)
  2  usage or configuration error; nothing was purged
  3  nothing failed, but a safety rail refused a root (blast_radius, or
     paused by _reaper/PAUSE or paused: true): its due tables were kept
     (result refused)`, formatDuration(config.Default().Safety.MinTTL.D())),
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
	names, err := o.tableNames("purge", o.Names, true)
	if err != nil {
		return err
	}
	o.Names = names
	if o.DryRun {
		o.Sets = append(o.Sets, "dry_run=true")
	}
	rt, err := newRuntime(ctx, o.storeOptions, o.passFlags)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := reachRoot(ctx, "purge", o.ConfigPath != "", rt); err != nil {
		return err
	}
	rt.worker.Tables = o.Names
	if o.Progress {
		rt.worker.OnProgress = newProgressPrinter(o.stderr(), o.now).event
	}
	rep, err := rt.worker.Pass(ctx, func() bool { return draining(ctx) })
	if err != nil {
		return err
	}
	exportErr := rt.export(ctx)
	if exportErr != nil {
		rt.log.Error("export metrics", "error", exportErr)
	}
	if err := emptyRootHint(ctx, "purge", rt, rep, o.Names, o.ConfigPath != ""); err != nil {
		return err
	}
	out := purgeReportOf(rep, len(rt.cfg.Roots)+len(rt.cfg.Discover) > 1)
	switch {
	case o.Output == formatJSON:
		err = writePurgeJSON(stdout, out)
	case o.Quiet && len(out.Failed) == 0 && len(out.LedgerErrors) == 0:
		// -q: nothing to say when nothing failed.
	default:
		err = renderPurgeTable(stdout, out)
	}
	if err != nil {
		return err
	}
	if rep.Interrupted {
		return &failedError{op: "purge", msg: fmt.Sprintf("purge interrupted: %d due table(s) not started, %d root(s) not visited; run purge again to finish",
			notStarted(rep), rep.RootsNotVisited)}
	}
	tableErr := out.err()
	var usage *usageError
	if errors.As(tableErr, &usage) {
		return tableErr
	}
	if n := len(out.LedgerErrors); n > 0 {
		// Before the tables' failures: a journal that refused a purge's
		// intent failed them, and this says why.
		msg := fmt.Sprintf("purge: %d audit ledger write(s) failed, the audit trail of this pass may be incomplete: %s", n, out.LedgerErrors[0])
		if f := len(out.Failed); f > 0 {
			msg += fmt.Sprintf("; %d table(s) or root(s) failed, see the lines above", f)
		}
		return &failedError{op: "purge", msg: msg}
	}
	if tableErr != nil {
		return tableErr
	}
	if len(rep.RootErrors) > 0 {
		return &failedError{op: "purge", msg: "purge: root discovery incomplete, some roots were not visited: " + strings.Join(rep.RootErrors, "; ")}
	}
	if exportErr != nil {
		return &failedError{op: "purge", msg: exportErr.Error()}
	}
	var refused []string
	for _, rr := range rep.Roots {
		if rr.Refused != "" {
			refused = append(refused, rr.Root+" ("+string(rr.Refused)+")")
		}
	}
	if len(refused) > 0 {
		return &refusedError{roots: refused}
	}
	return nil
}

// err is the pass's verdict: a usage error (exit 2) when a root failed for
// a reason the operator fixes in the configuration, a failedError when any
// other root or any table failed.
func (r *purgeReport) err() error {
	if n := len(r.misconfigured); n > 0 {
		// The report names each root and what to set: the exit line points
		// at it rather than say it again.
		return &usageError{err: fmt.Errorf("purge: %d root(s) could not be reached, a configuration error (ROOTS FAILED above, or the failed entries without a name in the JSON, say what to set); nothing in them was purged", n)}
	}
	if len(r.Failed) == 0 {
		return nil
	}
	tables, roots := len(r.failedTables()), len(r.failedRoots())
	if roots > 0 {
		return &failedError{op: "purge", msg: fmt.Sprintf("purge: %d root(s) could not be read and %d table(s) failed; see the lines above", roots, tables)}
	}
	return &failedError{op: "purge", failed: tables, all: len(r.Purged) + r.skippedLen() + tables}
}

// notStarted counts due tables a drained pass did not start: shutdown
// before any lease was tried.
func notStarted(rep *worker.Report) int {
	n := 0
	for _, rr := range rep.Roots {
		for d := range rr.All() {
			if d.Reason == outcome.ReasonShutdown && d.Lease == "" {
				n++
			}
		}
	}
	return n
}

// purgeReportOf flattens a pass into the purge JSON: purged (and dry-run)
// tables, skipped ones with a reason, failed ones with an error. Entries
// carry their root when the pass covers more than one (or may: several
// configured roots, discovery patterns). The routine decisions (tables
// not due yet, or kept back with their whole root) stay in the pass's
// report (its compact records) and are listed among the skipped when the
// report is written.
func purgeReportOf(rep *worker.Report, withRoot bool) *purgeReport {
	out := newPurgeReport(rep.DryRun)
	for _, err := range rep.LedgerErrors {
		out.LedgerErrors = append(out.LedgerErrors, err.Error())
	}
	multi := withRoot || len(rep.Roots) > 1
	for _, rr := range rep.Roots {
		root := ""
		if multi {
			root = rr.Root
		}
		if rr.Err != nil {
			msg := rr.Err.Error()
			if se := storeError(rr.Root, rr.Err); se != rr.Err {
				out.misconfigured = append(out.misconfigured, se)
				msg = strings.TrimPrefix(se.Error(), rr.Root+": ")
			}
			out.Failed = append(out.Failed, failedJSON{Root: rr.Root, Code: outcome.ReasonRootError, Error: msg})
		}
		if rr.RoutineLen() > 0 {
			out.routine = append(out.routine, routineRoot{root: root, rr: rr})
		}
		// Tables finish in any order under concurrency; report them in plan
		// order (oldest purge_after first).
		first := len(out.Purged)
		for _, d := range rr.Decisions {
			switch d.Action {
			case outcome.Purged, outcome.DryRun:
				out.Purged = append(out.Purged, purgedJSON{Root: root, Name: d.Table, Objects: d.Objects, Bytes: d.Bytes, after: d.Status.PurgeAfter})
			case outcome.Failed:
				out.Failed = append(out.Failed, failedJSON{Root: root, Name: d.Table, Code: d.Reason, Error: failureText(d)})
			default:
				out.Skipped = append(out.Skipped, skippedJSON{Root: root, Name: d.Table, Action: d.Action, Code: d.Reason, Reason: skipReason(d)})
			}
		}
		for d := range rr.Done() {
			out.Purged = append(out.Purged, purgedJSON{Root: root, Name: d.Table, Objects: d.Objects, Bytes: d.Bytes, after: d.Status.PurgeAfter})
		}
		for _, d := range rr.Retention {
			rj := retainedJSON{Root: root, Result: d.Action, Code: d.Reason,
				Versions: d.Versions, Objects: d.Objects, Bytes: d.Bytes, Detail: d.Detail}
			rj.Name, rj.Location = jsonName(d.Table)
			out.Retained = append(out.Retained, rj)
			if d.Action == outcome.Failed {
				out.Failed = append(out.Failed, failedJSON{Root: root, Name: rj.Name, Code: d.Reason, Error: d.Detail})
			}
		}
		ps := out.Purged[first:]
		slices.SortStableFunc(ps, func(a, b purgedJSON) int {
			return cmp.Or(a.after.Compare(b.after), strings.Compare(a.Name, b.Name))
		})
		for i := range ps {
			ps[i].after = time.Time{}
		}
	}
	key := func(root, name string) string { return root + "\x00" + name }
	sortByName(out.Skipped, func(s skippedJSON) string { return key(s.Root, s.Name) })
	sortByName(out.Failed, func(f failedJSON) string { return key(f.Root, f.Name) })
	// The skipped list merges with the routine decisions by root and name.
	slices.SortStableFunc(out.routine, func(a, b routineRoot) int { return strings.Compare(a.root, b.root) })
	return out
}

// skipReason says why a table was kept, for people; a conflict's reason
// starts with "conflict".
func skipReason(d worker.Decision) string {
	switch d.Reason {
	case outcome.ReasonNotDue:
		if !d.Status.PurgeAfter.IsZero() {
			return "not due until " + formatTime(d.Status.PurgeAfter)
		}
		return d.Detail
	case outcome.ReasonConflict:
		var ce *lifecycle.ConflictError
		if errors.As(d.Err, &ce) {
			return ce.Error() // "conflict: table ...: why"
		}
		return "conflict: " + d.Detail
	case outcome.ReasonLocked:
		var le *lock.LockedError
		if errors.As(d.Err, &le) {
			at := le.TakeoverAt
			if le.Never() {
				at = time.Time{}
			}
			return "locked: " + leaseHolder(&reaper.LeaseInfo{Owner: le.Holder.Owner}, at)
		}
		var holder *reaper.LeaseInfo
		if d.Status.Lease != nil {
			holder = &reaper.LeaseInfo{Owner: d.Status.Lease.Owner}
		}
		return "locked: " + leaseHolder(holder, d.Status.LeaseTakeoverAt)
	case outcome.ReasonHeld:
		if d.Status.Hold != nil {
			return "held: legal hold (" + d.Status.Hold.Reason + "); 'reaper release' lifts it"
		}
		return "held: " + d.Detail
	case outcome.ReasonShortTTL:
		return "short ttl: " + d.Detail
	case outcome.ReasonBlastRadius:
		return "refused: blast radius: " + d.Detail
	default:
		return string(d.Reason) + ": " + d.Detail
	}
}

// failureText explains a failed table.
func failureText(d worker.Decision) string {
	switch {
	case d.Err == nil && (d.Reason == outcome.ReasonInvalidMarker || d.Status.State == lifecycle.StateUnreadable):
		return invalidMessage(d.Status)
	case d.Err == nil && d.Reason == outcome.ReasonFutureMarker:
		return "future-dated marker: " + d.Status.Problem
	case d.Reason == outcome.ReasonNotFound:
		return d.Detail + lanceSuffixHint(d.Table)
	case d.Err != nil:
		return d.Err.Error()
	}
	return d.Detail
}

// invalidMessage explains an invalid, unreadable or future-dated marker.
func invalidMessage(s lifecycle.TableStatus) string {
	switch s.State {
	case lifecycle.StateInvalidMarker:
		return fmt.Sprintf("%s.deleted: %s; it is never purged: fix it, or remove it with 'reaper revive' to keep the table", s.Name, s.Problem)
	case lifecycle.StateUnreadable:
		return fmt.Sprintf("%s; not purged while unreadable: check the store's permissions on that key (the next pass retries)", s.Problem)
	}
	return "future-dated marker: " + s.Problem
}

// leaseHolder names who holds a lease and from when, by the store's clock,
// it may be taken over (takeoverAt zero: never, or not known).
func leaseHolder(l *reaper.LeaseInfo, takeoverAt time.Time) string {
	switch {
	case l == nil:
		return "another process holds the table's lease"
	case strings.HasPrefix(l.Owner, "unreadable lease"):
		return l.Owner
	case takeoverAt.IsZero():
		return fmt.Sprintf("lease held by %s, never taken over (a TTL of centuries): if no process holds it, delete the table's .reaper-lock by hand", l.Owner)
	}
	return fmt.Sprintf("lease held by %s; if that process is gone, it can be taken over from %s", l.Owner, formatTime(takeoverAt))
}

func sortByName[T any](s []T, name func(T) string) {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(name(a), name(b)) })
}
