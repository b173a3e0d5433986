package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// errBudget stops a purge that reached its object budget; the marker stays
// and the next pass continues where this one stopped.
var errBudget = errors.New("object budget reached")

// batchDeleter sends delete batches with adaptive concurrency (adaptive.go), running the
// guard (lease read back, marker, hold, PAUSE, commit) before each one, and
// stops submitting at the first error or when the object budget is spent.
// A batch takes its concurrency slot first and is guarded after: the guard
// judges the batch when it is sent, not when it was planned, so a hold or
// PAUSE placed while it waited for a slot stops it. The lease's fence,
// carried by ctx, is asked again by the backend immediately before each
// request; a batch a backend deletes key by key asks the context and the
// marker between its keys too (batch_between.go).
type batchDeleter struct {
	ctx      context.Context
	store    objstore.Store
	guard    batchGuard
	between  *betweenKeys
	name     string
	budget   int64 // 0 = unlimited
	progress func(objects, bytes int64)
	// filter, when set, is asked once a batch has its slot and passed the
	// guard, just before it goes: what of it may still go.
	filter func(context.Context, []keyEntry) ([]keyEntry, error)

	slots     *inflight
	wg        sync.WaitGroup
	mu        sync.Mutex
	submitted int64
	objects   int64
	bytes     int64
	err       error
}

// batchGuard is what a batch deleter asks before each batch: the lease
// held in memory (no request), then the guard's reads from the store; and
// between the keys of a batch, its marker read alone.
type batchGuard interface {
	leaseHeld() error
	check(ctx context.Context) error
	markerRead(ctx context.Context) error
}

func (g *guard) leaseHeld() error { return g.lease.Check() }

func newBatchDeleter(ctx context.Context, store objstore.Store, g batchGuard, name string, opts PurgeOptions) *batchDeleter {
	between := newBetweenKeys(g.markerRead, time.Now)
	return &batchDeleter{
		ctx: objstore.WithBetweenKeys(ctx, between.check), store: store, guard: g, between: between, name: name,
		budget: opts.MaxObjects, progress: opts.Progress,
		slots: newInflight(opts.DeleteConcurrency, opts.MaxDeleteConcurrency, objstore.PushbacksOf(store), nil),
	}
}

// submit queues one batch (copied: the spill reuses its slice).
func (d *batchDeleter) submit(batch []keyEntry) error {
	d.mu.Lock()
	err := d.err
	if err == nil && d.budget > 0 && d.submitted >= d.budget {
		err = errBudget
	}
	d.submitted += int64(len(batch))
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.slots.acquire(d.ctx); err != nil {
		return d.fail(fmt.Errorf("purge %q: %w", d.name, err))
	}
	if err := d.guard.leaseHeld(); err != nil {
		d.slots.release(false)
		return d.fail(fmt.Errorf("purge %q: stopped before a delete: %w", d.name, err))
	}
	if err := d.guard.check(d.ctx); err != nil {
		d.slots.release(false)
		return d.fail(err)
	}
	if d.filter != nil {
		// Judged when the batch goes, with its slot, as the guard is.
		var err error
		if batch, err = d.filter(d.ctx, batch); err != nil {
			d.slots.release(false)
			return d.fail(err)
		}
		if len(batch) == 0 {
			d.slots.release(true)
			return nil
		}
	}
	keys := make([]string, len(batch))
	sizes := make([]int64, len(batch))
	var size int64
	for i, e := range batch {
		keys[i], sizes[i] = e.key, e.size
		size += e.size
	}
	d.between.guarded()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		err := d.store.DeleteBatch(d.ctx, keys)
		d.slots.release(err == nil)
		objects, bytes := int64(len(keys)), size
		if err != nil {
			objects, bytes = deletedOf(keys, sizes, err)
			if stop := d.between.stopped(); stop != nil {
				// Stopped between its keys: the guard's own error, as
				// before the next batch.
				d.fail(stop)
			} else {
				d.fail(fmt.Errorf("purge %q: delete objects: %w", d.name, err))
			}
		}
		d.mu.Lock()
		d.objects += objects
		d.bytes += bytes
		o, b := d.objects, d.bytes
		d.mu.Unlock()
		if err == nil && d.progress != nil {
			d.progress(o, b)
		}
	}()
	return nil
}

// deletedOf is what a batch that failed with err deleted: with a
// *objstore.BatchError, every key it does not list (a batch stopped
// between its keys deleted those before the stop); otherwise nothing is
// known to be deleted.
func deletedOf(keys []string, sizes []int64, err error) (objects, bytes int64) {
	var be *objstore.BatchError
	if !errors.As(err, &be) {
		return 0, 0
	}
	failed := make(map[string]bool, len(be.Failed))
	for _, f := range be.Failed {
		failed[f.Key] = true
	}
	for i, k := range keys {
		if !failed[k] {
			objects++
			bytes += sizes[i]
		}
	}
	return objects, bytes
}

func (d *batchDeleter) fail(err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
	return d.err
}

// wait blocks until every submitted batch finished and returns the first
// error.
func (d *batchDeleter) wait() error {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// totals returns what was deleted so far.
func (d *batchDeleter) totals() (objects, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.objects, d.bytes
}
