package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
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
	// OutcomePartial: the object budget ran out; the marker stays and the next
	// purge continues where this one stopped.
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
	// DeleteConcurrency is how many delete batches are in flight (default 1).
	DeleteConcurrency int
	// Planned is the table as a plan just read it. Its marker (ETag and
	// value) stands in for the first marker read, saving a request; the read
	// under the lease still compares against it.
	Planned *TableStatus
	// MaxObjects stops the purge after about this many objects (whole
	// batches), leaving the marker so the next purge continues: one huge
	// table cannot hold a pass forever. 0 = no limit.
	MaxObjects int64
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
}

// Lease outcomes of a purge (PurgeResult.Lease).
const (
	LeaseAcquired  = "acquired"
	LeaseContended = "contended"
	LeaseError     = "error"
)

// Purge reclaims a soft-deleted table whose marker is valid and due. This
// file owns the purge order; every step is safe to crash after, and a re-run
// finishes the job:
//
//  1. read and check the marker (valid, due, not future-dated);
//  2. take the table's lease; re-read the marker under it and stop if its
//     bytes or ETag changed or it vanished; stop if a legal hold exists;
//  3. identity fence: walk <name>.lance/ once; any object modified after the
//     marker was written, or after deleted_at + skew allowance, means a
//     writer that ignores our lock (LanceDB reviving by overwrite) has been
//     there: stop with a conflict, having touched nothing;
//  4. delete the _versions/ manifests first, so the table cannot be opened;
//  5. delete everything else under <name>.lance/, in batches of 1000;
//  6. verify the prefix is empty (a listing);
//  7. delete the marker last, conditionally on the ETag read under the lease;
//  8. release the lease.
//
// The lease is checked before every destructive step; a lost lease stops the
// purge with the marker in place.
func (ns *Namespace) Purge(ctx context.Context, name string, opts PurgeOptions) (PurgeResult, error) {
	res := PurgeResult{Name: name}
	if err := ValidateName(name); err != nil {
		return res, err
	}
	body, mobj, m, err := ns.plannedMarker(ctx, name, opts.Planned)
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return res, ns.noMarkerError(ctx, name)
		}
		return res, fmt.Errorf("purge %q: %w", name, err)
	}
	now := ns.opts.Now()
	var st TableStatus
	ns.fillMarker(&st, m, now)
	res.DeletedAt, res.PurgeAfter = st.DeletedAt, st.PurgeAfter
	if st.FutureDated {
		return res, fmt.Errorf("purge %q: %w: %s", name, ErrNotPurgeable, st.Problem)
	}
	if !st.Due(now) {
		return res, &NotDueError{Name: name, PurgeAfter: st.PurgeAfter}
	}
	fence := ns.fence(m, mobj)
	log := ns.log.With("table", name)

	if opts.DryRun {
		if err := ns.checkHold(ctx, name); err != nil {
			return res, err
		}
		err := ns.walkTable(ctx, name, func(o objstore.Object) error {
			if err := fence(o); err != nil {
				return err
			}
			res.Objects++
			res.Bytes += o.Size
			return nil
		})
		res.Outcome = OutcomeDryRun
		return res, err
	}

	lease, err := ns.locker.Acquire(ctx, LockKey(name))
	if err != nil {
		res.Lease = LeaseError
		if errors.Is(err, ErrLocked) {
			res.Lease = LeaseContended
		}
		return res, fmt.Errorf("purge %q: %w", name, err)
	}
	res.Lease = LeaseAcquired
	defer ns.release(lease, name)
	ctx = lease.Context()

	body2, mobj2, err := ns.store.Get(ctx, MarkerKey(name))
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) {
			return res, &ConflictError{Name: name, Reason: "marker vanished while taking the lock (revived or purged by another process)"}
		}
		return res, fmt.Errorf("purge %q: re-read marker under lock: %w", name, err)
	}
	m2, perr := ParseMarker(body2)
	if mobj2.ETag != mobj.ETag || perr != nil || m2 != m || (body != nil && !bytes.Equal(body, body2)) {
		return res, &ConflictError{Name: name, Reason: "marker changed while taking the lock (revived and dropped again?); the next pass re-reads it"}
	}
	// A legal hold blocks the purge. It is read under the lease only: a hold
	// placed before that read is seen, and one request per table is saved.
	if err := ns.checkHold(ctx, name); err != nil {
		return res, err
	}

	// 3. Identity fence, collecting keys: manifests in memory, the rest
	// spilled, so nothing is deleted before every object has been checked.
	manifests := newSpill(ns.opts.SpillDir)
	defer manifests.close()
	rest := newSpill(ns.opts.SpillDir)
	defer rest.close()
	dir := TableDir(name)
	err = ns.walkTable(ctx, name, func(o objstore.Object) error {
		if err := fence(o); err != nil {
			return err
		}
		if isManifest(strings.TrimPrefix(o.Key, dir)) {
			return manifests.add(o.Key, o.Size)
		}
		return rest.add(o.Key, o.Size)
	})
	if err != nil {
		return res, err
	}
	if manifests.n+rest.n == 0 {
		res.Outcome = OutcomeOrphanMarker
	} else {
		res.Outcome = OutcomePurged
		log.Info("purge started", "objects", manifests.n+rest.n, "manifests", manifests.n)
	}

	// 4-5. Manifests first, then the rest.
	d := newBatchDeleter(ctx, ns.store, lease, name, opts)
	err = manifests.each(objstore.MaxBatchDelete, d.submit)
	if werr := d.wait(); err == nil || errors.Is(err, errBudget) && werr != nil {
		err = werr // the manifests finish before anything else goes
	}
	if err == nil {
		err = rest.each(objstore.MaxBatchDelete, d.submit)
		if werr := d.wait(); err == nil || errors.Is(err, errBudget) && werr != nil {
			err = werr
		}
	}
	res.Objects, res.Bytes = d.totals()
	if errors.Is(err, errBudget) {
		res.Outcome = OutcomePartial
		log.Info("purge paused at its object budget; the next pass continues", "objects", res.Objects, "bytes", res.Bytes)
		return res, nil
	}
	if err != nil {
		return res, err
	}

	// 6. Verify: anything left was written during the purge.
	var left string
	err = ns.walkTable(ctx, name, func(o objstore.Object) error {
		left = o.Key
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return res, err
	}
	if left != "" {
		return res, &ConflictError{Name: name, Reason: fmt.Sprintf("%s appeared during the purge; the marker is kept and the table needs an operator", left)}
	}

	// 7. Marker last, only if it is still the one read under the lease.
	if err := lease.Check(); err != nil {
		return res, fmt.Errorf("purge %q: stopped before deleting the marker: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, MarkerKey(name), mobj2.ETag); err != nil {
		return res, fmt.Errorf("purge %q: delete marker: %w", name, err)
	}
	log.Info("purge finished", "outcome", res.Outcome, "objects", res.Objects, "bytes", res.Bytes)
	return res, nil
}

// fence returns the identity check for one object of a table: an object
// modified after the marker was stored (same clock: the store's), or after
// deleted_at plus the skew allowance (the dropper's clock), was written after
// the drop. Times are compared at whole seconds, since S3 reports
// Last-Modified at second precision on GET and HEAD.
func (ns *Namespace) fence(m Marker, marker objstore.Object) func(objstore.Object) error {
	limit := m.DeletedAt().Add(ns.opts.SkewAllowance)
	if !marker.LastModified.IsZero() && marker.LastModified.Before(limit) {
		limit = marker.LastModified
	}
	limit = limit.Truncate(time.Second)
	return func(o objstore.Object) error {
		if o.LastModified.Truncate(time.Second).After(limit) {
			return &ConflictError{Name: "", Reason: fmt.Sprintf("%s was modified at %s, after the drop (fence %s): a writer revived or wrote the table; nothing was deleted",
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
		return heldError(name, h)
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
func (ns *Namespace) release(lease *lock.Lease, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		ns.log.Warn("release lease", "table", name, "err", err)
	}
}
