package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// withRootChange names a root change behind a purge's lost lease. A local
// root repointed mid-purge (a symlink flip, a directory swapped with mv)
// also loses the lease: its renewals and the guard read through the moved
// root, and a process paused across the move loses it to its deadline
// first. Work stopped by the fence or by the lease's cancelled context then
// never reaches the store to learn why, and the failure would read as a
// bare lost lease. One read of the marker tells (only after a lost lease):
// the move is what an operator must act on, since another directory,
// perhaps a live database, is at the path now.
func (ns *Namespace) withRootChange(ctx context.Context, name string, err error) error {
	if err == nil || !errors.Is(err, lock.ErrLost) || errors.Is(err, objstore.ErrRootChanged) {
		return err
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, herr := ns.store.Head(hctx, MarkerKey(name)); errors.Is(herr, objstore.ErrRootChanged) {
		return fmt.Errorf("%w: %w", herr, err)
	}
	return err
}
