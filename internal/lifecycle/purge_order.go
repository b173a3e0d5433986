package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// Outcome says what a purge did.
type Outcome string

const (
	// OutcomePurged: the data and then the marker were deleted.
	OutcomePurged Outcome = "purged"
	// OutcomeOrphanMarker: no data was left; only the marker was deleted.
	OutcomeOrphanMarker Outcome = "orphan_marker_removed"
	// OutcomeDryRun: nothing was deleted; Objects and Bytes are what would be.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomePartial: the object budget ran out; the commit and the marker
	// stay and the next purge continues where this one stopped.
	OutcomePartial Outcome = "partial"
)

// PurgeOptions tune one purge.
type PurgeOptions struct {
	// DryRun walks the table and checks the fence but deletes nothing and
	// takes no lease.
	DryRun bool
	// Progress, when set, is called after each delete batch with the running
	// totals (from several goroutines when DeleteConcurrency > 1).
	Progress func(objects, bytes int64)
	// Walked, when set, is called once the table has been walked, with the
	// objects and bytes the purge is about to delete: with Progress, it
	// gives a progress bar its total.
	Walked func(objects, bytes int64)
	// DeleteConcurrency is how many delete batches are in flight at first
	// (default 1); MaxDeleteConcurrency is how far that grows while the
	// store does not push back (adaptive.go; below DeleteConcurrency: fixed).
	DeleteConcurrency    int
	MaxDeleteConcurrency int
	// Planned is the table as a plan just read it. Its marker (ETag and
	// value) stands in for the first marker read, saving a request; the read
	// under the lease still compares against it.
	Planned *TableStatus
	// MaxObjects stops the purge after about this many objects (whole
	// batches), leaving the commit and the marker so the next purge
	// continues: one huge table cannot hold a pass forever. 0 = no limit.
	MaxObjects int64
	// MinTTL is the TTL floor (ttl_floor.go): a table whose marker's TTL is
	// below it is kept (ErrShortTTL), checked once the walk has found data
	// to protect. 0 = no floor: a pass applies its own as a rail.
	MinTTL time.Duration
	// AfterWalk, when set, is called once the identity fence's walk has
	// counted what the purge would delete (on a dry run too), before the
	// intent, the guard and the commit; not for a purge that had committed
	// already, which is finished whatever. Its error stops the purge with
	// nothing committed or deleted: a pass's rails that need the table's
	// size hold it back here (worker/rails.go).
	AfterWalk func(ctx context.Context, objects, bytes int64) error
	// BeforeCommit, when set, is called once per purge under the lease,
	// after the identity fence's walk and before the guard and the purge
	// commit (step 4), with the objects and bytes the purge is about to
	// delete: the audit ledger records its intent there. Its error stops
	// the purge with nothing committed or deleted: a destruction that
	// cannot be audited does not happen. Not called on a dry run.
	BeforeCommit func(ctx context.Context, objects, bytes int64) error
}

// PurgeResult reports one purge.
type PurgeResult struct {
	Name    string
	Outcome Outcome
	// Objects and Bytes deleted (or that would be, on a dry run), not
	// counting the marker.
	Objects int64
	Bytes   int64
	// DeletedAt and PurgeAfter come from the marker.
	DeletedAt  time.Time
	PurgeAfter time.Time
	// Lease is how taking the table's lease went: "" when the purge stopped
	// before trying (not due, dry run), else LeaseAcquired, LeaseContended
	// or LeaseError.
	Lease string
	// Committed: the purge wrote (or found) the table's purge commit, so
	// the table is partially purged until a purge finishes it.
	Committed bool
}

// Lease outcomes of a purge (PurgeResult.Lease): the outcome vocabulary's.
const (
	LeaseAcquired  = string(outcome.LeaseAcquired)
	LeaseContended = string(outcome.LeaseContended)
	LeaseError     = string(outcome.LeaseError)
)

// Purge reclaims a soft-deleted table whose marker is valid and due by the
// store's clock, or finishes one whose purge committed. This file owns the
// purge order (docs/PROTOCOL.md); every step is safe to crash after, and a
// re-run finishes the job:
//
//  1. read the marker: valid, due by the store's clock, not future-dated;
//  2. take the table's lease (its fenced context carries all that follows);
//     re-read the marker under it and stop if its bytes or ETag changed or
//     it vanished; a purge commit naming this marker means finish it, one
//     naming another marker is stale (removed after the guard, step 4);
//     stop if a hold exists;
//  3. identity fence: walk <name>.lance/ once (never following a link); any
//     object modified after the drop means a writer that ignores our lock
//     has been there: stop with a conflict, having touched nothing; an
//     object whose name the store cannot delete refuses the table too;
//     then the checks that need the walk's count (the TTL floor,
//     PurgeOptions.AfterWalk) may keep the table, touched by nothing;
//  4. record the intent (PurgeOptions.BeforeCommit; its error stops the
//     purge here), guard (lease read back, marker unchanged, no hold, no
//     PAUSE), then write the purge commit: from here the table can only be
//     finished;
//  5. delete the manifests first, then everything else, in batches of
//     1,000, the guard before each batch and the lease's fence before each
//     request; each phase made durable before the next step;
//  6. verify: an old object the store kept is deleted alone and named in
//     the error if it survives; a new one is a writer: conflict;
//  7. remove the table's empty directories (local disks);
//  8. guard, delete the table's rows in an external commit store
//     (s3+ddb://, purge_rows.go: read in step 3; a newer row is a writer:
//     conflict), a retention record left beside the table, the commit,
//     then the marker last (if unchanged);
//  9. release the lease.
//
// Once the table is committed (step 4, or a commit found in step 2), what
// stops the purge is no longer a skip: it is a StuckError, recorded in the
// commit (purge_stuck.go).
func (ns *Namespace) Purge(ctx context.Context, name string, opts PurgeOptions) (PurgeResult, error) {
	res := PurgeResult{Name: name}
	if err := ValidateName(name); err != nil {
		return res, err
	}
	if IsNamespaced(name) {
		return res, RootTableOnly("purge", name)
	}
	ctx = withTable(ctx, name)
	planned := opts.Planned != nil && opts.Planned.Name == name
	body, mobj, m, err := ns.plannedMarker(ctx, name, opts.Planned)
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return res, ns.noMarkerError(ctx, name)
		}
		return res, fmt.Errorf("purge %q: %w", name, err)
	}
	var commit *Commit
	if planned {
		commit = opts.Planned.Commit
	} else if c, _, err := ns.readCommit(ctx, name); err != nil {
		return res, fmt.Errorf("purge %q: %w", name, err)
	} else if c != nil && c.Matches(body) {
		commit = c
	}
	st, err := ns.judge(ctx, name, m, mobj.LastModified, commit)
	res.DeletedAt, res.PurgeAfter = st.DeletedAt, st.PurgeAfter
	if err != nil {
		return res, err
	}

	if opts.DryRun {
		if err := ns.checkIsTable(ctx, name); err != nil {
			return res, fmt.Errorf("purge %q: %w", name, err)
		}
		return ns.dryRun(ctx, name, st, mobj, res, opts)
	}

	err = ns.underLease(ctx, "purge", name, &res.Lease, func(lctx context.Context, lease *lock.Lease) error {
		var err error
		res, err = ns.purgeUnderLease(lctx, lease, name, body, mobj, res, opts)
		return err
	})
	return res, err
}

// dryRun checks the hold and the identity fence and counts what a purge
// would delete, then asks the TTL floor and AfterWalk as a purge would; it
// takes no lease and writes nothing. st is the judged marker.
func (ns *Namespace) dryRun(ctx context.Context, name string, st TableStatus, mobj objstore.Object, res PurgeResult, opts PurgeOptions) (PurgeResult, error) {
	if err := ns.checkHold(ctx, name); err != nil {
		return res, err
	}
	fence := ns.fence(*st.Marker, mobj)
	err := ns.walkTable(ctx, name, func(o objstore.Object) error {
		if err := fence(o); err != nil {
			return err
		}
		if err := deletable(name, o.Key); err != nil {
			return err
		}
		res.Objects++
		res.Bytes += o.Size
		return nil
	})
	if err == nil {
		if err = ns.afterWalk(ctx, name, st, res.Objects, res.Bytes, opts); err != nil {
			res.Objects, res.Bytes = 0, 0 // kept: nothing would be deleted
		}
	}
	res.Outcome = OutcomeDryRun
	return res, untouched(err)
}

// afterWalk runs the checks that need the walk's count, before anything
// is recorded or committed: the TTL floor, then opts.AfterWalk. st is the
// judged marker; a committed purge passes both.
func (ns *Namespace) afterWalk(ctx context.Context, name string, st TableStatus, objects, bytes int64, opts PurgeOptions) error {
	if st.Commit != nil {
		return nil
	}
	if err := checkTTLFloor(name, st, objects, opts.MinTTL); err != nil {
		return err
	}
	if opts.AfterWalk != nil {
		if err := opts.AfterWalk(ctx, objects, bytes); err != nil {
			return fmt.Errorf("purge %q: %w", name, err)
		}
	}
	return nil
}

// untouched says of a conflict found before anything was deleted that
// nothing was.
func untouched(err error) error {
	var ce *ConflictError
	if errors.As(err, &ce) {
		ce.Reason += "; nothing was deleted"
	}
	return err
}

// purgeUnderLease runs steps 2 to 8 under the lease; ctx is its fenced
// context. planned* are the marker as read before the lease (body nil when
// a plan only knew its ETag). A committed purge that cannot finish records
// why in its commit (purge_stuck.go).
func (ns *Namespace) purgeUnderLease(ctx context.Context, lease *lock.Lease, name string, plannedBody []byte, plannedObj objstore.Object, res PurgeResult, opts PurgeOptions) (_ PurgeResult, err error) {
	var g *guard
	defer func() {
		var stuck *StuckError
		if errors.As(err, &stuck) && g != nil {
			ns.noteStuck(ctx, name, g.commitETag, stuck)
		}
	}()
	log := ns.log.With("table", name)
	// 2. The marker under the lease is the one every later step compares
	// against; the due-ness is judged again with it.
	body, mobj, err := ns.store.Get(ctx, MarkerKey(name), MaxControlBytes)
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return res, &ConflictError{Name: name, Reason: "marker vanished while taking the lock (revived or purged by another process)"}
		}
		return res, fmt.Errorf("purge %q: re-read marker under lock: %w", name, err)
	}
	m, perr := ParseMarker(body)
	if mobj.ETag != plannedObj.ETag || perr != nil || (plannedBody != nil && !bytes.Equal(plannedBody, body)) {
		return res, &ConflictError{Name: name, Reason: "marker changed while taking the lock (revived and dropped again?); the next pass re-reads it"}
	}
	commit, cobj, err := ns.readCommit(ctx, name)
	if err != nil {
		return res, fmt.Errorf("purge %q: %w", name, err)
	}
	var stale *Commit // removed after the guard, before this purge commits
	if commit != nil && !commit.Matches(body) {
		stale, commit = commit, nil
	}
	st, err := ns.judge(ctx, name, m, mobj.LastModified, commit)
	res.DeletedAt, res.PurgeAfter, res.Committed = st.DeletedAt, st.PurgeAfter, commit != nil
	if err != nil {
		return res, err
	}
	// A hold placed before this read is seen here; one placed later is seen
	// by the guard before the commit and before every batch.
	if err := ns.checkHold(ctx, name); err != nil {
		return res, err
	}
	// A link where the table's directory should be is never entered (the
	// walk would see nothing and take it for an orphan marker).
	if err := ns.checkIsTable(ctx, name); err != nil {
		return res, fmt.Errorf("purge %q: %w", name, err)
	}

	// From here a purge that finds the table committed finishes it: a
	// refusal is no longer a skip but a stuck table (purge_stuck.go).
	g = &guard{ns: ns, name: name, lease: lease, markerETag: mobj.ETag}
	if commit != nil {
		g.commitETag = cobj.ETag
	}

	// 3. Identity fence, collecting keys: manifests in memory, the rest
	// spilled, so nothing is deleted before every object has been checked.
	// A key the store could not delete refuses the table here, before the
	// commit, rather than at every batch after it. The rows of an external
	// commit store (s3+ddb://) are read first: a writer puts its manifest
	// before its row, so a writer after the drop whose row this read sees
	// left an object the walk's fence sees, and a row written after this
	// read commits a newer version than it saw (step 8 stops there).
	seen, err := ns.readRows(ctx, name)
	if err != nil {
		if commit != nil {
			return res, stuckAfterCommit(name, err)
		}
		return res, err
	}
	fence := ns.fence(m, mobj)
	manifests := newSpill(ns.opts.SpillDir)
	defer manifests.close()
	rest := newSpill(ns.opts.SpillDir)
	defer rest.close()
	dir := TableDir(name)
	err = ns.walkTable(ctx, name, func(o objstore.Object) error {
		if err := fence(o); err != nil {
			return err
		}
		if err := deletable(name, o.Key); err != nil {
			return err
		}
		if isManifest(strings.TrimPrefix(o.Key, dir)) {
			return manifests.add(o.Key, o.Size)
		}
		return rest.add(o.Key, o.Size)
	})
	if err != nil {
		if commit != nil {
			return res, stuckAfterCommit(name, err)
		}
		return res, untouched(err)
	}
	// A plan that saw no data judged the table as an orphan marker, which
	// the pass's rails let through whatever its TTL (nothing to protect).
	// Data found now (a table moved in with its old times, which the fence
	// cannot tell from the drop's) voids that judgement: the next pass
	// plans it again, rails and all.
	if commit == nil && opts.Planned != nil && opts.Planned.Name == name &&
		opts.Planned.State == StateOrphanMarker && manifests.n+rest.n > 0 {
		return res, &ConflictError{Name: name, Reason: "the plan saw no data (an orphan marker, exempt from the TTL floor and the blast radius) and the walk found some: the next pass plans the table again; nothing was deleted"}
	}

	// The rails that need the walk's count (ttl_floor.go, AfterWalk).
	if err := ns.afterWalk(ctx, name, st, int64(manifests.n+rest.n), manifests.size+rest.size, opts); err != nil {
		return res, err
	}
	// 4. The intent, then the guard, then the commit. The intent comes
	// first so the guard's reads stay next to the commit.
	if opts.BeforeCommit != nil {
		if err := opts.BeforeCommit(ctx, int64(manifests.n+rest.n), manifests.size+rest.size); err != nil {
			return res, fmt.Errorf("purge %q: record the intent before the commit: %w", name, err)
		}
	}
	if err := g.check(ctx); err != nil {
		return res, err
	}
	if stale != nil {
		if err := ns.store.DeleteIfMatch(ctx, CommitKey(name), cobj.ETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return res, fmt.Errorf("purge %q: remove stale purge commit: %w", name, err)
		}
		log.WarnContext(ctx, "removed a stale purge commit: it named an earlier marker (the table was revived and dropped again outside reaper)",
			"committed_by", stale.Owner, "committed_at", stale.committedAt())
	}
	switch {
	case commit != nil:
	case manifests.n+rest.n > 0:
		info := lease.Info()
		obj, err := ns.writeCommit(ctx, name, body, info.Owner, info.Generation)
		if err != nil {
			return res, fmt.Errorf("purge %q: %w", name, err)
		}
		g.commitETag, res.Committed = obj.ETag, true
	}
	if manifests.n+rest.n == 0 {
		res.Outcome = OutcomeOrphanMarker
	} else {
		res.Outcome = OutcomePurged
		log.InfoContext(ctx, "purge committed", "objects", manifests.n+rest.n, "manifests", manifests.n, "finishing", commit != nil)
	}

	// 5. Manifests first, then the rest.
	if opts.Walked != nil {
		opts.Walked(int64(manifests.n+rest.n), manifests.size+rest.size)
	}
	// A local disk makes each phase's removals durable once per touched
	// directory at the phase's end (objstore.SyncBatch), not per batch: the
	// manifests are durably gone before the rest starts, and the rest
	// before the verify and the marker.
	durable := objstore.NewSyncBatch()
	defer func() { _ = durable.Flush() }() // after a failure: best effort
	d := newBatchDeleter(objstore.WithSyncBatch(ctx, durable), ns.store, g, name, opts)
	phase := func(keys *spill) error {
		err := keys.each(ns.opts.DeleteBatch, d.submit)
		if werr := d.wait(); err == nil || errors.Is(err, errBudget) && werr != nil {
			err = werr // a phase finishes before anything else goes
		}
		if ferr := durable.Flush(); ferr != nil && (err == nil || errors.Is(err, errBudget)) {
			err = fmt.Errorf("purge %q: %w", name, ferr)
		}
		return err
	}
	err = phase(manifests)
	if err == nil {
		err = phase(rest)
	}
	res.Objects, res.Bytes = d.totals()
	if errors.Is(err, errBudget) {
		res.Outcome = OutcomePartial
		log.InfoContext(ctx, "purge paused at its object budget; the next pass continues", "objects", res.Objects, "bytes", res.Bytes)
		return res, nil
	}
	if err != nil {
		return res, err
	}

	// 6-7. Nothing of the table may be left.
	if err := ns.finishTable(ctx, g, name, fence); err != nil {
		if g.commitETag != "" {
			err = stuckAfterCommit(name, err)
		}
		return res, err
	}

	// 8. The commit, then the marker last, each only if unchanged. A
	// retention record a killed retention run left names files of the
	// table now gone: it goes with the table, before the commit.
	if err := g.check(ctx); err != nil {
		return res, fmt.Errorf("purge %q: stopped before deleting the marker: %w", name, err)
	}
	if err := ns.deleteRows(ctx, name, seen); err != nil {
		if g.commitETag != "" {
			err = stuckAfterCommit(name, err)
		}
		return res, err
	}
	if obj, err := ns.store.Head(ctx, RetainKey(name)); err == nil {
		if err := ns.store.DeleteIfMatch(ctx, RetainKey(name), obj.ETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return res, fmt.Errorf("purge %q: delete retention record: %w", name, err)
		}
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return res, fmt.Errorf("purge %q: read retention record: %w", name, err)
	}
	if g.commitETag != "" {
		if err := ns.store.DeleteIfMatch(ctx, CommitKey(name), g.commitETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return res, fmt.Errorf("purge %q: delete purge commit: %w", name, err)
		}
	}
	sent := &sentFence{Fence: lease}
	if err := ns.store.DeleteIfMatch(objstore.WithFence(ctx, sent), MarkerKey(name), mobj.ETag); err != nil {
		if !sent.sent.Load() || !ns.markerGone(ctx, name) {
			return res, fmt.Errorf("purge %q: delete marker: %w", name, err)
		}
		// An attempt went out under the lease and its answer was lost (the
		// process paused past its lease while it was in flight, or the
		// connection broke); a retry was refused or found nothing to
		// match, and the marker is gone. A request sent under the lease
		// lands before anyone can take the lease over (docs/PROTOCOL.md,
		// A1, A2), so it was ours: the table is purged. Had the fence
		// refused every attempt, the marker's remover would be a process
		// that took the lease over, and this purge's lease is lost.
		log.WarnContext(ctx, "the marker delete's answer was lost, but the marker is gone: the table is purged", "error", err)
	}
	// delete_concurrency is where the adaptive limit ended (adaptive.go):
	// what to set limits.delete_concurrency to for a fixed number.
	log.InfoContext(ctx, "purge finished", "outcome", res.Outcome, "objects", res.Objects, "bytes", res.Bytes,
		"delete_concurrency", d.slots.current())
	return res, nil
}

// judge decides, by the store's clock, whether the marker m (stored with
// LastModified lm, maybe committed) may be purged now: an error wrapping
// ErrNotPurgeable when it is future-dated or not due.
func (ns *Namespace) judge(ctx context.Context, name string, m Marker, lm time.Time, commit *Commit) (TableStatus, error) {
	st := TableStatus{Commit: commit}
	now, err := ns.storeNow(ctx)
	if err != nil {
		return st, fmt.Errorf("purge %q: %w", name, err)
	}
	ns.fillMarker(&st, m, lm, now)
	switch {
	case st.FutureDated:
		return st, fmt.Errorf("purge %q: %w: %s", name, ErrNotPurgeable, st.Problem)
	case !st.Due(now):
		return st, &NotDueError{Name: name, PurgeAfter: st.PurgeAfter}
	}
	return st, nil
}

// withLeaseCause makes an error that stopped work under a lost lease say so
// (errors.Is lock.ErrLost) and not say cancelled: a request cut short by the
// lease's cancelled context otherwise reads as a plain cancellation, and a
// lost lease is a failure, not an interruption. A batch can carry both: one
// delete refused by the fence (lease lost) beside others the cancellation
// cut short.
func withLeaseCause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	switch {
	case !errors.Is(cause, lock.ErrLost):
		return err
	case errors.Is(err, context.Canceled):
		// The cancellation was the lease's doing: the chain says lease
		// lost, not canceled, so no caller mistakes it for a shutdown.
		return fmt.Errorf("%w (%v)", cause, err)
	case errors.Is(err, lock.ErrLost):
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// sentFence is a lease's fence that remembers whether it let a request go.
type sentFence struct {
	objstore.Fence
	sent atomic.Bool
}

func (f *sentFence) Allow() (time.Duration, error) {
	d, err := f.Fence.Allow()
	if err == nil {
		f.sent.Store(true)
	}
	return d, err
}

// cleanupTimeout bounds the requests a purge makes after its lease's
// context may have been cancelled: the release, the read of a marker whose
// delete's answer was lost.
const cleanupTimeout = 10 * time.Second

// markerGone reports whether the store no longer holds name's marker. It
// reads with its own deadline: the lease's context may be cancelled.
func (ns *Namespace) markerGone(ctx context.Context, name string) bool {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := ns.store.Head(hctx, MarkerKey(name))
	return errors.Is(err, objstore.ErrNotFound)
}

// deletable refuses a key the stores would refuse to delete (an empty, "."
// or ".." segment, which S3, GCS and Azure accept in names): found by the
// walk, it stops the purge before its commit instead of making every batch
// that holds it fail after the commit, when the table can no longer be
// revived.
func deletable(name, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return &UndeletableKeyError{Name: name, Key: key, Err: err}
	}
	return nil
}

// lostOr returns the lease's loss instead of a conflict found under it when
// the lease is lost: a holder paused past its deadline that finds the
// marker gone, or new files in the table, finds them because another
// process took its lease over (and revived or recreated the table), and
// must say so: a lost lease is a failure, counted and alerted; a conflict
// is a skip.
func lostOr(ctx context.Context, lease *lock.Lease, err error) error {
	var conflict *ConflictError
	if !errors.As(err, &conflict) && !errors.Is(err, ErrStuck) {
		return err
	}
	if verr := lease.Verify(ctx); errors.Is(verr, lock.ErrLost) {
		return verr
	}
	return err
}

// fence returns the identity check for one object of a table: an object
// modified after the marker was stored (same clock: the store's), or after
// deleted_at plus the skew allowance (the dropper's clock), was written after
// the drop. Times are compared at whole seconds, since S3 reports
// Last-Modified at second precision on GET and HEAD; a local disk reports
// the later of mtime and ctime, so a file copied in with an old mtime
// still shows when it arrived.
func (ns *Namespace) fence(m Marker, marker objstore.Object) func(objstore.Object) error {
	limit := m.DeletedAt().Add(ns.opts.SkewAllowance)
	if !marker.LastModified.IsZero() && marker.LastModified.Before(limit) {
		limit = marker.LastModified
	}
	limit = limit.Truncate(time.Second)
	return func(o objstore.Object) error {
		if o.LastModified.Truncate(time.Second).After(limit) {
			return &ConflictError{Name: "", Reason: fmt.Sprintf("%q was modified at %s, after the drop (fence %s): a writer revived or wrote the table",
				o.Key, o.LastModified.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339))}
		}
		return nil
	}
}

// plannedMarker returns the marker as planned (body nil: only its ETag and
// value are known) or reads it.
func (ns *Namespace) plannedMarker(ctx context.Context, name string, p *TableStatus) ([]byte, objstore.Object, Marker, error) {
	if p != nil && p.Name == name && p.Marker != nil && p.MarkerETag != "" {
		return nil, objstore.Object{Key: MarkerKey(name), ETag: p.MarkerETag, LastModified: p.MarkerModified}, *p.Marker, nil
	}
	return ns.readMarker(ctx, name)
}

// checkHold returns a heldError while the table has a legal hold.
func (ns *Namespace) checkHold(ctx context.Context, name string) error {
	h, err := ns.readHold(ctx, name)
	if err != nil {
		return fmt.Errorf("purge %q: %w", name, err)
	}
	if h != nil {
		return heldError("purge", name, h)
	}
	return nil
}

// walkTable calls fn for every object under <name>.lance/.
func (ns *Namespace) walkTable(ctx context.Context, name string, fn func(objstore.Object) error) error {
	err := ns.store.Walk(ctx, TableDir(name), func(objs []objstore.Object) error {
		for _, o := range objs {
			if err := fn(o); err != nil {
				return err
			}
		}
		return nil
	})
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Name == "" {
		ce.Name = name
	}
	if err != nil && !errors.Is(err, errStop) && ce == nil {
		return fmt.Errorf("walk %s: %w", TableDir(name), err)
	}
	return err
}

// noMarkerError explains why a name without a marker is not purged.
func (ns *Namespace) noMarkerError(ctx context.Context, name string) error {
	exists, err := ns.hasData(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("purge %q: %w", name, err)
	case exists:
		return fmt.Errorf("purge %q: %w: %w: it has no marker %s; drop it first", name, ErrNotPurgeable, ErrNotSoftDeleted, MarkerKey(name))
	default:
		return fmt.Errorf("purge %q: %w", name, ErrNotFound)
	}
}

// release gives the lease back on a fresh context: the caller's may be done.
func (ns *Namespace) release(ctx context.Context, lease *lock.Lease, name string) {
	// Detached from the work's cancellation, not from its trace: the
	// release's span belongs to the table's purge.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		ns.log.WarnContext(ctx, "release lease", "table", name, "error", err)
	}
}
