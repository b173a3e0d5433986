package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// SweepLeases deletes the leases that a process left behind when it died
// after it was done with its table but before it released the lease: a
// purge killed between deleting the marker and releasing (the table is
// gone), a revive killed after removing the marker (the table is live). No
// later purge ever takes such a lease over, since there is no marker to
// purge. A lease is swept only when no marker sits beside it and it expired
// at now, the condition under which any process may take it over, and only
// if it is still the version read (DeleteIfMatch), so a process taking it
// over meanwhile wins. An unreadable lease is kept (fail closed). It costs
// one listing of the root plus one read per lease without a marker, and
// returns the keys deleted.
func (ns *Namespace) SweepLeases(ctx context.Context, now time.Time) ([]string, error) {
	markers := map[string]bool{}
	var leases []string
	err := ns.store.List(ctx, "", func(p objstore.Page) error {
		for _, o := range p.Objects {
			switch name, kind := classifyObject(o.Key); kind {
			case entryMarker:
				markers[name] = true
			case entryLock:
				leases = append(leases, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep leases: list root %s: %w", ns.store.URI(), err)
	}
	var swept []string
	var errs []error
	for _, name := range leases {
		if markers[name] {
			continue // a purge or revive takes it over when it expires
		}
		key := LockKey(name)
		body, obj, err := ns.store.Get(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep lease %s: %w", key, err))
			continue
		}
		info, err := lock.Parse(body)
		if err != nil || !info.Expired(now.Round(0)) {
			continue
		}
		err = ns.store.DeleteIfMatch(ctx, key, obj.ETag)
		switch {
		case err == nil:
			swept = append(swept, key)
			ns.log.Info("removed a lease left by a process that died after finishing its table",
				"table", name, "owner", info.Owner, "expired_at", info.ExpiresAt)
		case errors.Is(err, objstore.ErrPrecondition), errors.Is(err, objstore.ErrNotFound):
			// taken over or released meanwhile
		default:
			errs = append(errs, fmt.Errorf("sweep lease %s: %w", key, err))
		}
	}
	return swept, errors.Join(errs...)
}
