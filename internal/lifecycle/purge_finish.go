package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the end of a purge's deletes (steps 6 and 7 of the purge
// order): nothing of <name>.lance/ may be left before the marker goes, or
// LanceDB would list a table that cannot be opened and status would call it
// live.

// maxStragglers bounds how many objects the store kept that a purge
// retries one by one before it gives up and names them.
const maxStragglers = objstore.MaxBatchDelete

// finishTable verifies the table is empty after its batches, deleting alone
// each object older than the drop that the store kept (a key a batch
// delete refused or silently skipped), then removes the table's empty
// directories. An object newer than the drop is a writer: conflict.
func (ns *Namespace) finishTable(ctx context.Context, g *guard, name string, fence func(objstore.Object) error) error {
	kept, err := ns.leftovers(ctx, name, fence)
	if err != nil {
		return err
	}
	if len(kept) > 0 {
		if err := g.check(ctx); err != nil {
			return err
		}
		for _, key := range kept {
			if err := ns.store.Delete(ctx, key); err != nil {
				return fmt.Errorf("purge %q: delete %s alone after the batch delete kept it: %w", name, key, err)
			}
		}
		if kept, err = ns.leftovers(ctx, name, fence); err != nil {
			return err
		}
		if len(kept) > 0 {
			return fmt.Errorf("purge %q: the store kept %d object(s) it was asked to delete, also when deleted one by one (first: %q); delete them by hand, then run purge again to finish the table: %w",
				name, len(kept), kept[0], errStoreKept)
		}
	}
	if err := ns.store.PruneEmpty(ctx, TableDir(name)); err != nil {
		return fmt.Errorf("purge %q: remove the table's empty directories: %w", name, err)
	}
	return nil
}

// errStoreKept: objects survived their deletion.
var errStoreKept = errors.New("objects kept by the store")

// leftovers walks the table: objects older than the drop come back (up to
// maxStragglers), a newer one is a conflict.
func (ns *Namespace) leftovers(ctx context.Context, name string, fence func(objstore.Object) error) ([]string, error) {
	var kept []string
	err := ns.walkTable(ctx, name, func(o objstore.Object) error {
		if fence(o) != nil {
			return &ConflictError{Name: name, Reason: fmt.Sprintf("%q appeared during the purge; the marker and the purge commit are kept and the table needs an operator", o.Key)}
		}
		if len(kept) == maxStragglers {
			return errStop
		}
		kept = append(kept, o.Key)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return kept, nil
}
