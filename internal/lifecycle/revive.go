package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Revive undoes a soft-delete: under the lifecycle lease it deletes the marker
// conditionally on the ETag it read, so a concurrent purge or re-drop is
// never undone blindly. The data is not touched. A marker that does not
// parse is removed too (revive is how an operator clears it). A table whose
// purge committed (<name>.reaper-purge names its marker) is refused with
// ErrPartiallyPurged: part of it may be gone; purge finishes it.
func (ns *Namespace) Revive(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if IsNamespaced(name) {
		return RootTableOnly("revive", name)
	}
	ctx = withTable(ctx, name)
	if err := ns.checkIsTable(ctx, name); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	body, obj, _, err := ns.readMarker(ctx, name)
	if err != nil && !errors.Is(err, ErrInvalidMarker) {
		if !errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("revive %q: %w", name, err)
		}
		exists, herr := ns.hasData(ctx, name)
		switch {
		case herr != nil:
			return fmt.Errorf("revive %q: %w", name, herr)
		case exists:
			return fmt.Errorf("revive %q: %w: it is live already (no marker %s)", name, ErrNotSoftDeleted, MarkerKey(name))
		default:
			return fmt.Errorf("revive %q: %w: no marker and no data", name, ErrNotFound)
		}
	}
	exists, err := ns.hasData(ctx, name)
	if err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	if !exists {
		// A purge that committed and then stopped is partially purged
		// whatever it had deleted: say so, as status does.
		if c, _, cerr := ns.readCommit(ctx, name); cerr == nil && c != nil && c.Matches(body) {
			return committedError(name, c)
		}
		return fmt.Errorf("revive %q: %w: its data is gone (purged); run purge to remove the orphan marker", name, ErrNotFound)
	}
	lease, err := ns.locker.Acquire(ctx, LockKey(name))
	if err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	defer ns.release(ctx, lease, name)
	lctx := lease.Context()
	return withLeaseCause(lctx, ns.reviveUnderLease(lctx, lease.Verify, name, body, obj))
}

// reviveUnderLease removes the marker read as body/obj; ctx is the lease's
// fenced context and verify reads the lease back from the store.
func (ns *Namespace) reviveUnderLease(ctx context.Context, verify func(context.Context) error, name string, body []byte, obj objstore.Object) error {
	body2, obj2, err := ns.store.Get(ctx, MarkerKey(name), MaxControlBytes)
	if err != nil {
		return fmt.Errorf("revive %q: re-read marker under lock: %w", name, err)
	}
	if obj2.ETag != obj.ETag || !bytes.Equal(body, body2) {
		return &ConflictError{Name: name, Reason: "marker changed while taking the lock; run revive again"}
	}
	if err := ns.refuseCommitted(ctx, name, body2); err != nil {
		return err
	}
	// A purge deletes the _versions/ manifests first: data without them is
	// a purge that failed or was killed half-way (by an older reaper, which
	// wrote no commit). Reviving it would make a live table that cannot be
	// opened, partly deleted without its marker.
	if partly, err := ns.partlyPurged(ctx, name); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	} else if partly {
		return fmt.Errorf("revive %q: %w: its _versions/ manifests are gone but other files are left: a purge started deleting it and did not finish; run purge to finish it", name, ErrPartiallyPurged)
	}
	if err := verify(ctx); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, MarkerKey(name), obj2.ETag); err != nil {
		return fmt.Errorf("revive %q: delete marker: %w", name, err)
	}
	// The lease excludes purges, so no commit can have appeared. If one did
	// (an assumption of docs/PROTOCOL.md broken), the table may be partly
	// deleted: put the marker back with its very bytes, so the purge can
	// finish, and fail loudly.
	c, _, err := ns.readCommit(ctx, name)
	if err != nil || (c != nil && c.Matches(body2)) {
		if _, perr := ns.store.PutIfAbsent(context.WithoutCancel(ctx), MarkerKey(name), body2); perr != nil && !errors.Is(perr, objstore.ErrPrecondition) {
			return fmt.Errorf("revive %q: a purge commit appeared while reviving (or could not be read: %v) and restoring the marker failed: %w; run 'reaper status' and inspect the table", name, err, perr)
		}
		return fmt.Errorf("revive %q: %w: a purge committed while reviving (or its commit could not be read: %v); the marker was put back so the purge can finish", name, ErrPartiallyPurged, err)
	}
	ns.log.InfoContext(ctx, "table revived", "table", name)
	return nil
}

// committedError is revive's refusal of a table whose purge committed.
func committedError(name string, c *Commit) error {
	return fmt.Errorf("revive %q: %w: a purge committed at %s (%s) and may have deleted part of it; run purge to finish it",
		name, ErrPartiallyPurged, c.committedAt().UTC().Format(time.RFC3339), c.Owner)
}

// refuseCommitted fails with ErrPartiallyPurged when a purge committed
// against this marker; a stale commit (naming an earlier marker) is removed.
func (ns *Namespace) refuseCommitted(ctx context.Context, name string, marker []byte) error {
	c, cobj, err := ns.readCommit(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("revive %q: %w", name, err)
	case c == nil:
		return nil
	case c.Matches(marker):
		return committedError(name, c)
	}
	if err := ns.store.DeleteIfMatch(ctx, CommitKey(name), cobj.ETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("revive %q: remove stale purge commit: %w", name, err)
	}
	return nil
}

// partlyPurged reports whether <name>.lance/_versions/ is empty while the
// table holds something other than a .lance-reserved placeholder (a table
// declared but never written has no manifest either). Two listings at most.
func (ns *Namespace) partlyPurged(ctx context.Context, name string) (bool, error) {
	dir := TableDir(name)
	var versions, other bool
	err := ns.store.List(ctx, dir+versionsDir+"/", func(p objstore.Page) error {
		versions = len(p.Objects) > 0 || len(p.Prefixes) > 0
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, fmt.Errorf("list %s%s/: %w", dir, versionsDir, err)
	}
	if versions {
		return false, nil
	}
	err = ns.store.List(ctx, dir, func(p objstore.Page) error {
		for _, o := range p.Objects {
			if o.Key != dir+ReservedFile {
				other = true
			}
		}
		other = other || len(p.Prefixes) > 0
		if other {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, fmt.Errorf("list %s: %w", dir, err)
	}
	return other, nil
}
