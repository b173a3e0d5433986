package retry

import (
	"context"
	"errors"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DeleteBatch retries a failed batch. When the inner store reports a
// *BatchError whose failed keys are all transient, only those keys are sent
// again (the others are deleted); a batch error with any permanent key
// failure is returned at once. A whole-request transient failure resends the
// keys still pending.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	valid, refused, err := objstore.CheckBatch(keys)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return s.inner.DeleteBatch(ctx, keys)
	}
	if len(valid) == 0 {
		return objstore.BatchResult(refused, nil, nil)
	}
	// Keys the grammar refuses fail alone and are never resent: a
	// permanent failure would otherwise stop the retries of the others.
	err = s.deleteBatch(ctx, valid)
	return objstore.BatchResult(refused, valid, err)
}

// deleteBatch retries the delete of keys, which all pass the grammar.
func (s *Store) deleteBatch(ctx context.Context, keys []string) error {
	pending := keys
	_, err := s.do(ctx, "delete batch", keys[0], func(ctx context.Context) error {
		err := s.inner.DeleteBatch(ctx, pending)
		var be *objstore.BatchError
		if errors.As(err, &be) && s.transient(be) {
			pending = failedKeys(be)
		}
		return err
	})
	return err
}

func failedKeys(be *objstore.BatchError) []string {
	keys := make([]string, len(be.Failed))
	for i, f := range be.Failed {
		keys[i] = f.Key
	}
	return keys
}
