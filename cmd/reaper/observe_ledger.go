package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/worker"
)

// ledgerObserver writes one Parquet file per pass to the audit location,
// a row per decision.
type ledgerObserver struct {
	store   objstore.Store
	log     *slog.Logger
	version string
	host    string

	mu sync.Mutex
	w  *ledger.Writer
}

var _ worker.Observer = (*ledgerObserver)(nil)

func newLedgerObserver(store objstore.Store, log *slog.Logger) *ledgerObserver {
	host, _ := os.Hostname()
	return &ledgerObserver{store: store, log: log, version: version, host: host}
}

func (o *ledgerObserver) PassStarted(r *worker.Report) {
	o.mu.Lock()
	o.w = ledger.NewWriter(o.store, r.PassID, r.Started)
	o.mu.Unlock()
}

func (o *ledgerObserver) RootPlanned(*worker.Report, *worker.RootReport, lifecycle.Plan, time.Time) {}

func (o *ledgerObserver) Decision(r *worker.Report, d worker.Decision) {
	row := ledger.Row{
		PassID: r.PassID, Root: d.Root, Table: d.Table, Action: string(d.Action), Reason: d.Reason,
		DeletedAt: d.Status.DeletedAt, PurgeAfter: d.Status.PurgeAfter,
		Objects: d.Objects, Bytes: d.Bytes, Started: d.Started, Finished: d.Finished,
		Version: o.version, Host: o.host,
	}
	if d.Detail != "" {
		row.Reason += ": " + d.Detail
	}
	if d.Status.Marker != nil {
		ttl := d.Status.TTL
		row.TTL = &ttl
	}
	if d.Err != nil {
		row.Error = d.Err.Error()
	}
	o.mu.Lock()
	w := o.w
	o.mu.Unlock()
	if w != nil {
		w.Add(row)
	}
}

func (o *ledgerObserver) RootFinished(*worker.Report, *worker.RootReport) {}

// PassFinished writes the pass's file; a failure is logged, never fatal:
// the purge already happened and the metrics and logs still tell it.
func (o *ledgerObserver) PassFinished(r *worker.Report) {
	o.mu.Lock()
	w := o.w
	o.w = nil
	o.mu.Unlock()
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, err := w.Close(ctx)
	if err != nil {
		o.log.Error("write audit ledger", "pass_id", r.PassID, "err", err)
		return
	}
	o.log.Info("audit ledger written", "pass_id", r.PassID, "key", key, "rows", w.Len())
}
