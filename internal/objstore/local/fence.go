package local

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// fence asks the context's fence (objstore.CheckFence) immediately before
// a syscall that changes the tree: a mkdir, a rename or link that
// publishes a write, an unlink, an rmdir. Callers ask it after every lock
// they wait for, so a process paused while it waited changes nothing once
// its lease is gone. The fence's time limit is not applied: a local
// syscall cannot be abandoned half-way.
func fence(ctx context.Context) error {
	_, err := objstore.CheckFence(ctx)
	return err
}
