package objstore

import (
	"context"
	"errors"
	"sync"
)

// This file owns deferred durability: how a caller that deletes many keys
// in one directory asks a backend to make the removals durable once per
// phase instead of once per batch. A local disk makes a removal durable
// with an fsync of the directory; a purge of a million files in one
// directory would otherwise fsync it a thousand times. Object stores make
// every answered request durable and ignore it.
//
// The caller decides where durability matters: a purge flushes after its
// manifests and again after the rest, so the manifests are durably gone
// before anything else goes (docs/PROTOCOL.md, step 5). A crash inside a
// phase may bring back some files of that phase; the purge's commit is
// durable, so the next pass deletes them again.

// SyncBatch collects the durability work that deletes deferred. It is safe
// for concurrent use.
type SyncBatch struct {
	mu      sync.Mutex
	pending map[any]func() error
	order   []any
}

// NewSyncBatch returns an empty batch.
func NewSyncBatch() *SyncBatch { return &SyncBatch{pending: make(map[any]func() error)} }

type syncBatchKey struct{}

// WithSyncBatch returns ctx carrying b: deletes made with it defer their
// durability work to b instead of doing it before they return.
func WithSyncBatch(ctx context.Context, b *SyncBatch) context.Context {
	return context.WithValue(ctx, syncBatchKey{}, b)
}

// SyncBatchFrom returns ctx's batch, or nil: then the caller must make its
// change durable itself before returning.
func SyncBatchFrom(ctx context.Context) *SyncBatch {
	b, _ := ctx.Value(syncBatchKey{}).(*SyncBatch)
	return b
}

// Defer records fn under key (for instance a directory's device and inode)
// unless work under that key is already pending; it reports whether fn was
// taken. A caller whose fn was not taken keeps what fn would have released.
func (b *SyncBatch) Defer(key any, fn func() error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.pending[key]; ok {
		return false
	}
	b.pending[key] = fn
	b.order = append(b.order, key)
	return true
}

// Pending is the number of fns waiting for Flush.
func (b *SyncBatch) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// Flush runs every pending fn, in the order deferred, and empties the
// batch. It returns every failure joined: a change that could not be made
// durable is an error, as it would have been at the delete.
func (b *SyncBatch) Flush() error {
	b.mu.Lock()
	pending, order := b.pending, b.order
	b.pending, b.order = make(map[any]func() error), nil
	b.mu.Unlock()
	var errs []error
	for _, k := range order {
		if err := pending[k](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
