package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// SweepStaleLeases deletes the leases that a process left behind when it
// died after it was done with its table but before it released the lease:
// a purge killed between deleting the marker and releasing (the table is
// gone), a revive killed after removing the marker (the table is live). No
// later purge ever takes such a lease over, since there is no marker to
// purge. names are those that had a lease and no marker when the plan
// listed the root (Plan.LeaseOnly), so no second listing is needed. A lease is
// deleted only when no marker sits beside it now and the store's clock has
// passed its takeover time, the condition under which any process may take
// it over, and only if it is still the version read (DeleteIfMatch), so a
// process taking it over meanwhile wins. An unreadable lease is kept (fail
// closed). It costs one read per name, plus a marker check and a delete per
// expired lease.
func (ns *Namespace) SweepStaleLeases(ctx context.Context, names []string) ([]string, error) {
	var swept []string
	var errs []error
	for _, name := range names {
		key := LockKey(name)
		ctx := withTable(ctx, name)
		body, obj, err := ns.store.Get(ctx, key, lock.MaxLeaseBytes)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep lease %s: %w", key, err))
			continue
		}
		info, err := lock.Parse(body)
		if err != nil {
			continue
		}
		now, err := ns.storeNow(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep lease %s: %w", key, err))
			continue
		}
		if now.Before(info.TakeoverAt(obj.LastModified, ns.opts.SkewAllowance)) {
			continue
		}
		// The name was listed without a marker; one may have been written
		// since (a drop): its lease is then a purge's to take over.
		if _, err := ns.store.Head(ctx, MarkerKey(name)); !errors.Is(err, objstore.ErrNotFound) {
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep lease %s: check marker: %w", key, err))
			}
			continue
		}
		err = ns.store.DeleteIfMatch(ctx, key, obj.ETag)
		switch {
		case err == nil:
			swept = append(swept, key)
			ns.log.InfoContext(ctx, "removed a lease left by a process that died after finishing its table",
				"table", DisplayName(name), "owner", info.Owner, "last_written", obj.LastModified)
		case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
			// taken over or released meanwhile
		default:
			errs = append(errs, fmt.Errorf("sweep lease %s: %w", key, err))
		}
	}
	return swept, errors.Join(errs...)
}
