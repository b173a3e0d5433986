package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// LedgerObserver writes one Parquet file per pass to the audit location,
// a row per decision: the action as it is, the reason followed by the
// detail.
type LedgerObserver struct {
	store   objstore.Store
	log     *slog.Logger
	version string
	host    string
	// timeout bounds writing the pass's file.
	timeout time.Duration

	mu sync.Mutex
	w  *ledger.Writer
}

var _ Observer = (*LedgerObserver)(nil)

// NewLedgerObserver writes to store; version and host fill every row. A
// nil log logs to slog.Default().
func NewLedgerObserver(store objstore.Store, log *slog.Logger, version, host string) *LedgerObserver {
	if log == nil {
		log = slog.Default()
	}
	return &LedgerObserver{store: store, log: log, version: version, host: host, timeout: 30 * time.Second}
}

func (o *LedgerObserver) PassStarted(r *Report) {
	o.mu.Lock()
	o.w = ledger.NewWriter(o.store, r.PassID, r.Started)
	o.mu.Unlock()
}

func (o *LedgerObserver) RootPlanned(*Report, *RootReport, lifecycle.Plan, time.Time) {}

func (o *LedgerObserver) Decision(r *Report, d Decision) {
	o.mu.Lock()
	w := o.w
	o.mu.Unlock()
	if w != nil {
		w.Add(ledgerRow(r, d, o.version, o.host))
	}
}

// ledgerRow is one decision as an audit row.
func ledgerRow(r *Report, d Decision, version, host string) ledger.Row {
	row := ledger.Row{
		PassID: r.PassID, Root: d.Root, Table: d.Table, Action: string(d.Action), Reason: string(d.Reason),
		DeletedAt: d.Status.DeletedAt, PurgeAfter: d.Status.PurgeAfter,
		Objects: d.Objects, Bytes: d.Bytes, Started: d.Started, Finished: d.Finished,
		Version: version, Host: host,
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

// RootFinished adds a row for a root that could not be opened or planned
// (table "", action failed, reason error): without it, a pass over a root
// it could not read left a ledger file with no trace of it.
func (o *LedgerObserver) RootFinished(r *Report, rr *RootReport) {
	if rr.Err == nil {
		return
	}
	o.mu.Lock()
	w := o.w
	o.mu.Unlock()
	if w == nil {
		return
	}
	w.Add(ledger.Row{
		PassID: r.PassID, Root: rr.Root, Action: string(outcome.Failed), Reason: string(outcome.ReasonRootError),
		Started: rr.Started, Finished: rr.Finished, Error: rr.Err.Error(), Version: o.version, Host: o.host,
	})
}

// PassFinished writes the pass's file; a failure is logged, never fatal:
// the purge already happened and the metrics and logs still tell it.
func (o *LedgerObserver) PassFinished(r *Report) {
	o.mu.Lock()
	w := o.w
	o.w = nil
	o.mu.Unlock()
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	key, err := w.Close(ctx)
	if err != nil {
		o.log.Error("write audit ledger", "pass_id", r.PassID, "error", err)
		return
	}
	o.log.Info("audit ledger written", "pass_id", r.PassID, "key", key, "rows", w.Len())
}
