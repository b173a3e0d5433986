package gcs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns batch deletes. The JSON API client has no batch call (the
// multipart batch endpoint is not generated), so a batch is bounded
// concurrent single deletes: each its own fenced request, each failure
// named with its key.

// DefaultDeleteConcurrency is how many deletes of one batch are in flight.
const DefaultDeleteConcurrency = 32

// DeleteBatch removes up to objstore.MaxBatchDelete keys. Missing keys count
// as deleted. Each key asks ctx's between-keys check (objstore.BetweenKeys)
// before its request: a batch is many requests here. Once the fence or
// that check refuses, or ctx ends, keys not yet sent fail with that error
// and nothing more is sent. Keys that fail come back in a
// *objstore.BatchError, in the order they were given.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	keys, refused, err := objstore.CheckBatch(keys)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n := s.DeleteConcurrency
	if n <= 0 {
		n = DefaultDeleteConcurrency
	}
	var (
		mu     sync.Mutex
		failed []objstore.KeyError
		stop   error // the fence's or the check's refusal or ctx's end, once seen
		wg     sync.WaitGroup
		work   = make(chan string)
	)
	for range min(n, len(keys)) {
		wg.Go(func() {
			for k := range work {
				mu.Lock()
				stopped := stop
				mu.Unlock()
				var err error
				refused := false
				if stopped != nil {
					// The error names the key that stopped the batch.
					err = fmt.Errorf("delete %s: not sent: the batch stopped: %w", k, stopped)
				} else if err = objstore.BetweenKeys(ctx); err != nil {
					err, refused = fmt.Errorf("delete %s: not sent: %w", k, err), true
				} else {
					err = s.Delete(ctx, k)
				}
				if err == nil {
					continue
				}
				mu.Lock()
				failed = append(failed, objstore.KeyError{Key: k, Err: err})
				if stop == nil && (refused || errors.Is(err, objstore.ErrFenced) || ctx.Err() != nil) {
					stop = err
				}
				mu.Unlock()
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	failed = append(refused, failed...)
	if len(failed) == 0 {
		return nil
	}
	pos := make(map[string]int, len(keys))
	for i, k := range keys {
		pos[k] = i
	}
	slices.SortStableFunc(failed, func(a, b objstore.KeyError) int { return pos[a.Key] - pos[b.Key] })
	return &objstore.BatchError{Failed: failed}
}
