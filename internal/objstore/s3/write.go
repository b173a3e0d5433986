package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// put sends one PutObject under the fence. The response carries no
// LastModified, and a HeadObject would cost a request and race later
// writers, so LastModified is the response's Date: the store's clock just
// after the write, truncated to the second like LastModified itself. It is
// zero when the store sends no Date (then Now fails, and nothing that needs
// the store's clock is allowed).
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
	var (
		out *s3.PutObjectOutput
		a   answer
	)
	err = objstore.Fenced(ctx, func(rctx context.Context) (err error) {
		out, err = s.client.PutObject(rctx, in, s.observe(&a))
		return err
	})
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, mapError(err))
	}
	return objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         unquote(aws.ToString(out.ETag)),
		LastModified: a.date,
	}, nil
}

// Delete removes key; S3 answers success for a missing key.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, "delete", key, nil)
}

// DeleteIfMatch removes key only if its current ETag is etag (If-Match), in
// one request: AWS answers 412 on another ETag and 404 on a missing key
// (ErrNotFound); some servers (versitygw) answer 204 on a missing key, which
// reads as success here: the object is gone either way (see the Store
// contract).
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	return s.delete(ctx, "delete if match", key, aws.String(quote(etag)))
}

// delete sends one DeleteObject under the fence. The key travels in the URL
// path, so any key the store accepted can be named, unlike in the XML body
// of DeleteObjects (see DeleteBatch).
func (s *Store) delete(ctx context.Context, action, key string, ifMatch *string) error {
	k, err := s.abs(key)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(s.loc.Bucket), Key: k, IfMatch: ifMatch}
	err = objstore.Fenced(ctx, func(rctx context.Context) error {
		_, err := s.client.DeleteObject(rctx, in, s.observe(nil))
		return err
	})
	if err != nil {
		err = mapError(err)
		if ifMatch == nil && errors.Is(err, objstore.ErrNotFound) {
			return nil // some servers answer 404 where AWS answers 204
		}
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
	return nil
}
