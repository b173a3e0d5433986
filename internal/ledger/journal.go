package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// ErrJournal marks a purge's intent the journal could not record: the
// purge must stop before its commit. Once one journal write fails, every
// later intent of the pass fails with it too (the pass stops destroying
// instead of retrying a store that does not answer, table after table).
var ErrJournal = errors.New("audit journal cannot record the purge")

// ErrJournalStopped marks (beside ErrJournal) an intent refused without
// trying the store, because an earlier write of the pass failed: that
// failure was the one to count.
var ErrJournalStopped = errors.New("stopped at an earlier failure")

// JournalOptions configure the lease on a journal, held by its pass while
// it runs and by a pass folding it afterwards (recover.go).
type JournalOptions struct {
	// Owner names the process in the lease (host/pid).
	Owner string
	// TTL and Skew are the lease's (lock.Locker); TTL is raised to the
	// shortest lease the store's clock can hold (lock.MinTTL).
	TTL, Skew time.Duration
	// Clock is the holder's clock for its lease (nil: CLOCK_BOOTTIME).
	Clock func() time.Time
	// Now dates the records, as the pass dates its rows (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// TableGone, when set, is what Recover asks about a purge's intent
	// that has no outcome: whether the table is gone from its root, marker
	// and directory both (and no purge commit). Such a purge finished and
	// only its outcome was lost, so the folded row says purged, not
	// unfinished (recover.go). An error, or false, leaves the row
	// unfinished: present or unknown, the table may be partly purged.
	TableGone func(ctx context.Context, root, table string) (bool, error)
}

func (o JournalOptions) locker(store objstore.Store) *lock.Locker {
	res := objstore.TimeResolution
	if loc, err := all.ParseLocation(store.URI()); err == nil {
		if r := all.Default().ClockResolution(loc.Scheme); r > 0 {
			res = r
		}
	}
	return &lock.Locker{
		Store: store, Owner: o.Owner, TTL: max(cmp.Or(o.TTL, lock.DefaultTTL), lock.MinTTL(res)),
		SkewAllowance: o.Skew, Clock: o.Clock, Logger: o.Logger,
	}
}

// Journal is the journal of one running pass: a record per table it
// begins to purge, written before the purge commits and replaced by the
// table's row once decided, so that a pass killed at any instant leaves a
// durable trace of every table it may have destroyed. Its first intent
// takes the journal's lease, whose fence every later write carries: once
// another pass may have folded the journal (the lease lost), nothing more
// is written to it. Safe for concurrent use.
type Journal struct {
	store   objstore.Store
	passID  string
	started time.Time
	locker  *lock.Locker
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	lease   *lock.Lease
	written map[string]bool // record keys holding an intent or an outcome
	broken  error           // the first failed write; later intents fail with it
}

// NewJournal is the journal of pass passID (which must be a valid pass id),
// started at started.
func NewJournal(store objstore.Store, passID string, started time.Time, opts JournalOptions) *Journal {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Journal{store: store, passID: passID, started: started, locker: opts.locker(store), now: now,
		log: cmp.Or(opts.Logger, slog.Default()), written: map[string]bool{}}
}

// Intent records, durably, that the pass is about to purge row.Table of
// row.Root, deleting objects objects (bytes bytes); committed says the
// table already carries a purge commit. Call it before the purge commits.
// The error wraps ErrJournal when the record may not be stored (the purge
// must not go on), or is ctx's error when ctx ended first (the purge was
// stopped; not a journal failure).
func (j *Journal) Intent(ctx context.Context, row Row, objects, bytes int64, committed bool) error {
	lease, err := j.holdLease(ctx)
	if err != nil {
		return err
	}
	rec := record{Kind: kindIntent, PassStarted: formatTime(j.started), Written: formatTime(j.now()),
		Objects: objects, Bytes: bytes, Committed: committed, Row: toRowJSON(row)}
	return j.put(ctx, lease, row, rec)
}

// Outcome replaces the intent of row's table with row, the table's final
// row. A table without an intent has no record: its row waits for the
// pass's file (nothing of it was destroyed). The error says the record may
// not be stored; the intent then stands for the table until the pass's
// file is written.
func (j *Journal) Outcome(ctx context.Context, row Row) error {
	key := recordKey(j.passID, row.Root, row.Table, row.Location)
	j.mu.Lock()
	lease, has := j.lease, j.written[key]
	j.mu.Unlock()
	if !has {
		return nil
	}
	rec := record{Kind: kindOutcome, PassStarted: formatTime(j.started), Written: formatTime(j.now()), Row: toRowJSON(row)}
	return j.put(ctx, lease, row, rec)
}

// holdLease returns the journal's lease, taking it on first use.
func (j *Journal) holdLease(ctx context.Context) (*lock.Lease, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return nil, fmt.Errorf("%w: %w: an earlier journal write of this pass failed: %v", ErrJournal, ErrJournalStopped, j.broken)
	}
	if j.lease != nil {
		return j.lease, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The lease outlives the purge whose intent takes it: its renewals
	// run until Close, and its logs carry the pass, not that table.
	lease, err := j.locker.Acquire(context.WithoutCancel(ctx), journalLeaseKey(j.passID))
	if err != nil {
		j.broken = fmt.Errorf("take the journal's lease: %w", err)
		return nil, fmt.Errorf("%w: %v", ErrJournal, j.broken)
	}
	j.lease = lease
	return lease, nil
}

// put writes one record under the journal's lease.
func (j *Journal) put(ctx context.Context, lease *lock.Lease, row Row, rec record) error {
	key := recordKey(j.passID, row.Root, row.Table, row.Location)
	body, err := encodeRecord(rec)
	if err == nil {
		_, err = j.store.Put(objstore.WithFence(ctx, lease), key, body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		werr := fmt.Errorf("write journal record %s (%s of table %q of %s): %w", key, rec.Kind, row.Table, row.Root, err)
		j.mu.Lock()
		if j.broken == nil {
			j.broken = werr
		}
		j.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrJournal, werr)
	}
	j.mu.Lock()
	j.written[key] = true
	j.mu.Unlock()
	return nil
}

// Close ends the journal. With keep false (the pass's file holds every
// row) it removes the records; with keep true (the file could not be
// written) it leaves them for a later pass to fold. Either way it releases
// the lease. The error is a record it could not remove: a later pass folds
// it again, a duplicate of a row the pass's file holds (same pass_id, root
// and table), never a lost one.
func (j *Journal) Close(ctx context.Context, keep bool) error {
	j.mu.Lock()
	lease := j.lease
	keys := make([]string, 0, len(j.written))
	for k := range j.written {
		keys = append(keys, k)
	}
	j.mu.Unlock()
	if lease == nil {
		return nil
	}
	slices.Sort(keys)
	var err error
	if !keep {
		err = deleteKeys(objstore.WithFence(ctx, lease), j.store, keys)
	}
	if rerr := lease.Release(ctx); rerr != nil {
		j.log.WarnContext(ctx, "release the audit journal's lease", "pass_id", j.passID, "error", rerr)
	}
	if err == nil && !keep {
		// Local disks keep the emptied directory otherwise; elsewhere a no-op.
		_ = j.store.PruneEmpty(ctx, journalDir(j.passID))
	}
	return err
}

// deleteKeys deletes keys in batches.
func deleteKeys(ctx context.Context, store objstore.Store, keys []string) error {
	for b := range slices.Chunk(keys, objstore.MaxBatchDelete) {
		if err := store.DeleteBatch(ctx, b); err != nil {
			return fmt.Errorf("remove journal records: %w", err)
		}
	}
	return nil
}
