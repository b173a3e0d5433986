package azure

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Put writes key unconditionally; Put Blob replaces a block blob atomically.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return s.put(ctx, "put", key, body, nil)
}

// PutIfAbsent writes key only if it does not exist (If-None-Match: *);
// Azure answers 409 BlobAlreadyExists when it does.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	anyTag := azcore.ETagAny
	return s.put(ctx, "put if absent", key, body, &blob.ModifiedAccessConditions{IfNoneMatch: &anyTag})
}

// PutIfMatch replaces key only if its current ETag is etag (If-Match).
// Azure answers 412 both for another ETag and for a missing blob; a 412 is
// told apart with one Head (see lostOrMissing).
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	return s.put(ctx, "put if match", key, body, &blob.ModifiedAccessConditions{IfMatch: quoted(etag)})
}

// put sends one Put Blob under the fence. Its response carries the blob's
// ETag and Last-Modified, stamped by the store's clock.
func (s *Store) put(ctx context.Context, action, key string, body []byte, cond *blob.ModifiedAccessConditions) (objstore.Object, error) {
	n, err := s.name(key)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, err)
	}
	opts := &blockblob.UploadOptions{}
	if cond != nil {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: cond}
	}
	var resp blockblob.UploadResponse
	err = objstore.Fenced(ctx, func(rctx context.Context) (err error) {
		resp, err = s.client.NewBlockBlobClient(n).Upload(rctx, streaming.NopCloser(bytes.NewReader(body)), opts)
		return err
	})
	if err != nil {
		err = mapError(err)
		if cond != nil && cond.IfMatch != nil && errors.Is(err, objstore.ErrPrecondition) {
			err = s.lostOrMissing(ctx, n, err)
		}
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, err)
	}
	return objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         etagOf(resp.ETag),
		LastModified: deref(resp.LastModified),
	}, nil
}

// lostOrMissing classifies a 412 to an If-Match request: Azure (and
// Azurite) answer 412 for a missing blob too, where the contract wants
// ErrNotFound. One Head tells them apart; a blob deleted between the two
// requests reads as missing, which is also a true answer (the ETag matched
// nothing at some point in between).
func (s *Store) lostOrMissing(ctx context.Context, name string, precondErr error) error {
	_, err := s.client.NewBlobClient(name).GetProperties(ctx, nil)
	if err = mapError(err); errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	return precondErr
}

// Delete removes key; a missing blob (404) counts as deleted.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, "delete", key, nil)
}

// DeleteIfMatch removes key only if its current ETag is etag (If-Match):
// 412 on another ETag; a missing blob (412 too, see lostOrMissing, or 404)
// is ErrNotFound.
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	return s.delete(ctx, "delete if match", key, quoted(etag))
}

// delete sends one Delete Blob under the fence. Snapshots go with the blob
// (DeleteSnapshots=include): Azure refuses to delete a blob that has any.
func (s *Store) delete(ctx context.Context, action, key string, ifMatch *azcore.ETag) error {
	n, err := s.name(key)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	opts := &blob.DeleteOptions{DeleteSnapshots: deleteSnapshots()}
	if ifMatch != nil {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: ifMatch}}
	}
	err = objstore.Fenced(ctx, func(rctx context.Context) error {
		_, err := s.client.NewBlobClient(n).Delete(rctx, opts)
		return err
	})
	if err == nil {
		return nil
	}
	err = mapError(err)
	switch {
	case ifMatch == nil && errors.Is(err, objstore.ErrNotFound):
		return nil
	case ifMatch != nil && errors.Is(err, objstore.ErrPrecondition):
		err = s.lostOrMissing(ctx, n, err)
	}
	return fmt.Errorf("%s %s: %w", action, key, err)
}

func deleteSnapshots() *blob.DeleteSnapshotsOptionType {
	v := blob.DeleteSnapshotsOptionTypeInclude
	return &v
}
