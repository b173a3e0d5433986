package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Put writes key unconditionally; S3 replaces objects atomically.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return s.put(ctx, "put", key, body, nil)
}

// PutIfAbsent writes key only if it does not exist (If-None-Match: *).
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return s.put(ctx, "put if absent", key, body, func(in *s3.PutObjectInput) {
		in.IfNoneMatch = aws.String("*")
	})
}

// PutIfMatch replaces key only if its current ETag is etag (If-Match).
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	return s.put(ctx, "put if match", key, body, func(in *s3.PutObjectInput) {
		in.IfMatch = aws.String(quote(etag))
	})
}

// put sends one PutObject. The response carries no LastModified, and a
// HeadObject would cost a request and race later writers, so LastModified is
// the client's clock at the time the response arrived.
func (s *Store) put(ctx context.Context, action, key string, body []byte, cond func(*s3.PutObjectInput)) (objstore.Object, error) {
	k, err := s.abs(key)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.loc.Bucket),
		Key:           k,
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if cond != nil {
		cond(in)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, mapError(err))
	}
	return objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         unquote(aws.ToString(out.ETag)),
		LastModified: time.Now(),
	}, nil
}

// Delete removes key; S3 answers success for a missing key.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, "delete", key, nil)
}

// DeleteIfMatch removes key only if its current ETag is etag (If-Match).
// AWS answers 404 for If-Match on a missing key, but versitygw answers 204,
// so a HeadObject first tells a missing key (ErrNotFound) from a deleted one;
// a stale ETag fails there without sending the delete. The DeleteObject keeps
// its If-Match, so a write between the two requests still loses with 412.
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	// One request: AWS answers 412 on another ETag and 404 on a missing key;
	// some servers (versitygw) answer 204 on a missing key, which reads as
	// success here — the object is gone either way (see the Store contract).
	return s.delete(ctx, "delete if match", key, aws.String(quote(etag)))
}

func (s *Store) delete(ctx context.Context, action, key string, ifMatch *string) error {
	k, err := s.abs(key)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.loc.Bucket), Key: k, IfMatch: ifMatch})
	if err != nil {
		err = mapError(err)
		if ifMatch == nil && errors.Is(err, objstore.ErrNotFound) {
			return nil // some servers answer 404 where AWS answers 204
		}
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	return nil
}

// DeleteBatch removes up to objstore.MaxBatchDelete keys in one DeleteObjects
// request. The limit is checked here because some servers (versitygw) accept
// larger batches that AWS rejects. A 200 response can still list per-key
// failures; they come back as a *objstore.BatchError.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	if err := objstore.CheckBatch(keys); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(s.root + k)}
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(s.loc.Bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("delete batch of %d keys: %w", len(keys), mapError(err))
	}
	var failed []objstore.KeyError
	for _, e := range out.Errors {
		code := aws.ToString(e.Code)
		if code == "NoSuchKey" {
			continue // missing keys count as deleted
		}
		failed = append(failed, objstore.KeyError{
			Key: s.rel(aws.ToString(e.Key)),
			Err: &smithy.GenericAPIError{Code: code, Message: aws.ToString(e.Message)},
		})
	}
	if len(failed) > 0 {
		return &objstore.BatchError{Failed: failed}
	}
	return nil
}
