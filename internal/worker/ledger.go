package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
)

// Ledger writes each pass's audit ledger (internal/ledger): before a purge
// commits, a journal record of what it is about to destroy, replaced by the
// table's row once decided; when the pass ends, a Parquet file with a row
// per decision, after which the journal goes; and when a pass starts, the
// journals that passes killed before their end left behind, folded in.
// Unlike an Observer's, its failures are the pass's: an audit record lost
// or not written makes the pass partial (Report.LedgerErrors), and a purge
// whose intent cannot be recorded does not commit.
type Ledger struct {
	store   objstore.Store
	log     *slog.Logger
	version string
	host    string
	// timeout bounds each write made once the pass's context may be done
	// (an outcome record, the pass's file).
	timeout time.Duration
}

// NewLedger writes to store; version and host fill every row. A nil log
// logs to slog.Default().
func NewLedger(store objstore.Store, log *slog.Logger, version, host string) *Ledger {
	return &Ledger{store: store, log: cmp.Or(log, slog.Default()), version: version, host: host, timeout: 30 * time.Second}
}

// ledgerPass is one pass's ledger; a nil one (no ledger configured)
// records nothing.
type ledgerPass struct {
	l    *Ledger
	rep  *Report
	w    *ledger.Writer
	j    *ledger.Journal
	opts ledger.JournalOptions
}

// begin starts pass rep's ledger.
func (l *Ledger) begin(rep *Report, opts ledger.JournalOptions) *ledgerPass {
	if l == nil {
		return nil
	}
	opts.Logger = l.log
	return &ledgerPass{l: l, rep: rep, w: ledger.NewWriter(l.store, rep.PassID, rep.Started),
		j: ledger.NewJournal(l.store, rep.PassID, rep.Started, opts), opts: opts}
}

// recover folds the journals of passes that died (not in a dry run, which
// writes nothing but its own file); gone tells a table whose purge ended
// unrecorded and that is gone from its root, recorded purged rather than
// unfinished (ledger.JournalOptions.TableGone).
func (lp *ledgerPass) recover(ctx context.Context, gone func(ctx context.Context, root, table string) (bool, error)) {
	if lp == nil || lp.rep.DryRun {
		return
	}
	opts := lp.opts
	opts.TableGone = gone
	if _, err := ledger.Recover(ctx, lp.l.store, lp.rep.PassID, opts); err != nil && ctx.Err() == nil {
		lp.failed(fmt.Errorf("fold the audit journals of earlier passes: %w", err))
	}
}

// tableGone is the journal fold's question to this pass's roots (rs): is
// table gone from root, no marker, no purge commit and no data
// (lifecycle.StateNotFound)? The root is opened as the pass opens it, once
// per fold; a root not among rs (unconfigured since, another shard's)
// cannot be asked, which is an error: the row stays unfinished.
func (w *Worker) tableGone(rs []roots.Root, now func() time.Time, log *slog.Logger) func(ctx context.Context, root, table string) (bool, error) {
	byURI := make(map[string]roots.Root, len(rs))
	for _, r := range rs {
		byURI[r.URI] = r
	}
	var mu sync.Mutex
	opened := map[string]*lifecycle.Namespace{}
	return func(ctx context.Context, root, table string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		ns, ok := opened[root]
		if !ok {
			r, known := byURI[root]
			if !known {
				return false, fmt.Errorf("root %s is not among this pass's roots", root)
			}
			store, err := w.Open(ctx, r)
			if err != nil {
				return false, fmt.Errorf("open root %s: %w", root, err)
			}
			if ns, err = w.namespace(store, now, log); err != nil {
				return false, err
			}
			opened[root] = ns
		}
		st, err := ns.Status(ctx, table)
		if err != nil {
			return false, fmt.Errorf("status of %q in %s: %w", table, root, err)
		}
		return len(st) == 1 && st[0].State == lifecycle.StateNotFound, nil
	}
}

// failed records a ledger write that failed: the pass's and the log's.
func (lp *ledgerPass) failed(err error) {
	lp.rep.ledgerFailed(err)
	lp.l.log.Error("audit ledger write failed: the pass fails", "pass_id", lp.rep.PassID, "error", err)
}

// intent records, before the purge of s (on root, started at started)
// commits, that it is about to delete objects objects and bytes bytes: the
// hook lifecycle.PurgeOptions.BeforeCommit calls. Its error stops the purge
// before anything is deleted; a journal failure is the pass's too.
func (lp *ledgerPass) intent(ctx context.Context, root string, s lifecycle.TableStatus, started time.Time, objects, bytes int64) error {
	if lp == nil {
		return nil
	}
	// A purge whose table lease is lost stops as lease_lost, whatever the
	// journal says: a process frozen past its leases loses the table's and
	// the journal's at once, and the table's loss is what the table's row
	// must say. ctx carries the table lease's fence.
	if _, err := objstore.CheckFence(ctx); err != nil {
		return err
	}
	row := ledgerRow(lp.rep, Decision{Root: root, Table: s.Name, Status: s, Started: started, Finished: started}, lp.l.version, lp.l.host)
	err := lp.j.Intent(ctx, row, objects, bytes, s.Commit != nil)
	if err != nil && ctx.Err() == nil && !errors.Is(err, ledger.ErrJournalStopped) {
		lp.failed(err)
	}
	if err != nil {
		if _, ferr := objstore.CheckFence(ctx); ferr != nil {
			return ferr
		}
	}
	return err
}

// decision adds d's row to the pass's file and, for a table whose intent
// the journal holds, replaces the intent with it.
func (lp *ledgerPass) decision(d Decision) {
	if lp == nil {
		return
	}
	row := ledgerRow(lp.rep, d, lp.l.version, lp.l.host)
	lp.w.Add(row)
	ctx, cancel := context.WithTimeout(context.Background(), lp.l.timeout)
	defer cancel()
	if err := lp.j.Outcome(ctx, row); err != nil {
		lp.failed(err)
	}
}

// ledgerRow is one decision as an audit row.
func ledgerRow(r *Report, d Decision, version, host string) ledger.Row {
	row := ledger.Row{
		PassID: r.PassID, Root: d.Root, Table: lifecycle.DisplayName(d.Table), Action: string(d.Action), Reason: string(d.Reason),
		DeletedAt: d.Status.DeletedAt, PurgeAfter: d.Status.PurgeAfter,
		Objects: d.Objects, Bytes: d.Bytes, Started: d.Started, Finished: d.Finished,
		Version: version, Host: host,
	}
	if lifecycle.IsNamespaced(d.Table) {
		row.Location = d.Table // Table is its object id, which two directories may share
	}
	if d.Detail != "" {
		row.Reason += ": " + d.Detail
	}
	if d.Status.Marker != nil {
		ttl := d.Status.TTL
		row.TTL = &ttl
	}
	switch {
	case d.Err != nil:
		row.Error = d.Err.Error()
	case d.Action == outcome.Failed || d.Action == outcome.Conflict:
		// Failures found while planning (an invalid or future-dated
		// marker, a live or unknown name) carry no Go error, only their
		// explanation; the row's error must not be empty.
		row.Error = string(d.Reason) + ": " + d.Detail
	}
	return row
}

// rootFinished adds a row for a root that could not be opened or planned
// (table "", action failed, reason error): without it, a pass over a root
// it could not read left a ledger file with no trace of it. A root whose
// live tables version retention found nothing to do in gets one row for
// them all (table "", skipped, nothing_to_do, with their count): a row
// each, at thousands of idle tables a pass, would bury the rows that
// matter (retain.go).
func (lp *ledgerPass) rootFinished(rr *RootReport) {
	if lp == nil {
		return
	}
	row := ledger.Row{PassID: lp.rep.PassID, Root: rr.Root, Started: rr.Started, Finished: rr.Finished,
		Version: lp.l.version, Host: lp.l.host}
	switch idle := rr.idleTables(); {
	case rr.Err != nil:
		row.Action, row.Reason, row.Error = string(outcome.Failed), string(outcome.ReasonRootError), rr.Err.Error()
	case idle > 0:
		row.Action = string(outcome.Skipped)
		row.Reason = fmt.Sprintf("%s: version retention: %d live table(s) with no version old enough to remove (no row each)",
			outcome.ReasonNothingToDo, idle)
	default:
		return
	}
	lp.w.Add(row)
}

// finish writes the pass's file, then removes its journal; a file that
// cannot be written fails the pass and keeps the journal, which a later
// pass folds in.
func (lp *ledgerPass) finish() {
	if lp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lp.l.timeout)
	defer cancel()
	key, err := lp.w.Close(ctx)
	if err != nil {
		lp.failed(fmt.Errorf("write audit ledger: %w", err))
	} else {
		lp.l.log.Info("audit ledger written", "pass_id", lp.rep.PassID, "key", key, "rows", lp.w.Len())
	}
	if cerr := lp.j.Close(ctx, err != nil); cerr != nil {
		// The records stay, to be folded again: duplicates of rows the
		// file holds (same pass_id, root and table), never lost ones.
		lp.l.log.Warn("remove the pass's audit journal", "pass_id", lp.rep.PassID, "error", cerr)
	}
}
