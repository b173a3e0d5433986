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
	if err := lease.Check(); err != nil {
		return fmt.Errorf("revive %q: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, MarkerKey(name), obj2.ETag); err != nil {
		return fmt.Errorf("revive %q: delete marker: %w", name, err)
	}
	ns.log.Info("table revived", "table", name)
	return nil
}
