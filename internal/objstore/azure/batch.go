package azure

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// MaxBlobBatch is how many sub-requests one Blob Batch request may carry
// (the service's limit); DeleteBatch splits objstore.MaxBatchDelete keys
// into up to four such requests.
const MaxBlobBatch = 256

// DeleteBatch removes up to objstore.MaxBatchDelete keys with Blob Batch
// requests of up to BatchSize (default MaxBlobBatch) deletes each, every request under the
// fence. Keys travel in the sub-requests' URL paths, so any key the store
// accepted can be named (unlike S3's XML body). A missing key counts as
// deleted; keys that fail come back in a *objstore.BatchError, each with
// its own error. Once the fence refuses or ctx ends, the keys not yet sent
// fail with that error and nothing more is sent.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	keys, refused, err := objstore.CheckBatch(keys)
	if err != nil {
		return err
	}
	failed := refused
	size := s.batchSize()
	for start := 0; start < len(keys); start += size {
		chunk := keys[start:min(start+size, len(keys))]
		perKey, err := s.submit(ctx, chunk)
		if err != nil {
			if start == 0 && !errors.Is(err, objstore.ErrFenced) && ctx.Err() == nil {
				// Nothing was deleted: the retry layer retries the whole call.
				return objstore.BatchResult(refused, keys, err)
			}
			for _, k := range keys[start:] {
				failed = append(failed, objstore.KeyError{Key: k, Err: err})
			}
			break
		}
		failed = append(failed, perKey...)
	}
	if len(failed) > 0 {
		return &objstore.BatchError{Failed: failed}
	}
	return nil
}

func (s *Store) batchSize() int {
	if s.BatchSize > 0 && s.BatchSize < MaxBlobBatch {
		return s.BatchSize
	}
	return MaxBlobBatch
}

// submit sends one Blob Batch of deletes and returns its per-key failures.
func (s *Store) submit(ctx context.Context, keys []string) ([]objstore.KeyError, error) {
	bb, err := s.client.NewBatchBuilder()
	if err != nil {
		return nil, fmt.Errorf("delete batch: %w", err)
	}
	for _, k := range keys {
		if err := bb.Delete(s.root+k, &container.BatchDeleteOptions{DeleteOptions: blob.DeleteOptions{DeleteSnapshots: deleteSnapshots()}}); err != nil {
			return nil, fmt.Errorf("delete batch: %s: %w", k, err)
		}
	}
	var resp container.SubmitBatchResponse
	err = objstore.Fenced(ctx, func(rctx context.Context) (err error) {
		resp, err = s.client.SubmitBatch(rctx, bb, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delete batch of %d keys: %w", len(keys), mapError(err))
	}
	answered := make([]bool, len(keys))
	var failed []objstore.KeyError
	for _, r := range resp.Responses {
		if r == nil || r.ContentID == nil || *r.ContentID < 0 || *r.ContentID >= len(keys) {
			continue
		}
		answered[*r.ContentID] = true
		if r.Error == nil {
			continue
		}
		if err := mapError(r.Error); !errors.Is(err, objstore.ErrNotFound) {
			failed = append(failed, objstore.KeyError{Key: keys[*r.ContentID], Err: err})
		}
	}
	for i, ok := range answered {
		if !ok {
			failed = append(failed, objstore.KeyError{Key: keys[i], Err: errUnanswered})
		}
	}
	return failed, nil
}

// errUnanswered: a batch answer had no part for the key, so whether it was
// deleted is unknown; it is transient (a delete is idempotent).
var errUnanswered = &unansweredError{}

type unansweredError struct{}

func (*unansweredError) Error() string   { return "blob batch answer has no part for this key" }
func (*unansweredError) Timeout() bool   { return true }
func (*unansweredError) Temporary() bool { return true }
