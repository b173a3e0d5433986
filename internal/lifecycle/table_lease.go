package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/lock"
)

// underLease runs work under the table's lease, as a purge and a retention
// run do: take it (*result says how: LeaseAcquired, LeaseContended,
// LeaseError), run work with the lease's fenced context, release it, and
// report work's error with its cause: a lease lost mid-work, or a local
// root that came to name another directory. op names the operation in the
// error of a lease not taken.
func (ns *Namespace) underLease(ctx context.Context, op, name string, result *string, work func(lctx context.Context, lease *lock.Lease) error) error {
	lease, err := ns.locker.Acquire(ctx, LockKey(name))
	if err != nil {
		*result = LeaseError
		if errors.Is(err, ErrLocked) {
			*result = LeaseContended
		}
		return fmt.Errorf("%s %q: %w", op, name, err)
	}
	*result = LeaseAcquired
	defer ns.release(ctx, lease, name)
	lctx := lease.Context()
	err = work(lctx, lease)
	return ns.withRootChange(ctx, name, withLeaseCause(lctx, lostOr(lctx, lease, err)))
}
