package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Revive undoes a soft-delete: under the lifecycle lease it deletes the marker
// conditionally on the ETag it read, so a concurrent purge or re-drop is
// never undone blindly. The data is not touched. A marker that does not
// parse is removed too (revive is how an operator clears it).
func (ns *Namespace) Revive(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
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
		return fmt.Errorf("revive %q: %w: its data is gone (purged); run purge to remove the orphan marker", name, ErrNotFound)
	}
	lease, err := ns.locker.Acquire(ctx, LockKey(name))
	if err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	defer ns.release(lease, name)
	ctx = lease.Context()
	body2, obj2, err := ns.store.Get(ctx, MarkerKey(name))
	if err != nil {
		return fmt.Errorf("revive %q: re-read marker under lock: %w", name, err)
	}
	if obj2.ETag != obj.ETag || !bytes.Equal(body, body2) {
		return &ConflictError{Name: name, Reason: "marker changed while taking the lock; run revive again"}
	}
	// A purge deletes the _versions/ manifests first: data without them is
	// a purge that failed or was killed half-way. Reviving it would make a
	// live table that cannot be opened, partly deleted without its marker.
	if partly, err := ns.partlyPurged(ctx, name); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	} else if partly {
		return &ConflictError{Name: name, Reason: "its _versions/ manifests are gone but other files are left: a purge started deleting it and did not finish; it cannot be revived, run purge to finish it"}
	}
	if err := lease.Check(); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, MarkerKey(name), obj2.ETag); err != nil {
		return fmt.Errorf("revive %q: delete marker: %w", name, err)
	}
	ns.log.Info("table revived", "table", name)
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
			if o.Key != dir+".lance-reserved" {
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
