package gcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/api/googleapi"
	storage "google.golang.org/api/storage/v1"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// cond is a write's precondition: ifGenerationMatch=gen when set (0 is
// create-if-absent).
type cond struct {
	set bool
	gen int64
}

// Put writes key unconditionally; GCS replaces objects atomically.
func (s *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return s.put(ctx, "put", key, body, cond{})
}

// PutIfAbsent writes key only if it does not exist (ifGenerationMatch=0).
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	return s.put(ctx, "put if absent", key, body, cond{set: true, gen: 0})
}

// PutIfMatch replaces key only if its current generation is etag
// (ifGenerationMatch). GCS answers 412 for a missing object too; that
// answer is told apart by reading the key, so a missing key reads as
// objstore.ErrNotFound as the contract requires. An etag this store cannot
// have handed out matches nothing: no write is sent.
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	gen, ok := generationOf(etag)
	if !ok {
		return objstore.Object{}, s.mismatch(ctx, "put if match", key)
	}
	obj, err := s.put(ctx, "put if match", key, body, cond{set: true, gen: gen})
	if errors.Is(err, objstore.ErrPrecondition) {
		if _, herr := s.Head(ctx, key); errors.Is(herr, objstore.ErrNotFound) {
			return objstore.Object{}, fmt.Errorf("put if match %s: %w", key, herr)
		}
	}
	return obj, err
}

// mismatch is the answer to a conditional call whose etag matches nothing:
// ErrNotFound on a missing key, ErrPrecondition otherwise.
func (s *Store) mismatch(ctx context.Context, action, key string) error {
	_, err := s.Head(ctx, key)
	switch {
	case err == nil:
		return fmt.Errorf("%s %s: %w: not a generation of this object", action, key, objstore.ErrPrecondition)
	case errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("%s %s: %w", action, key, err)
	default:
		return fmt.Errorf("%s %s: %w", action, key, err)
	}
}

// put sends one upload (a single multipart request, no resumable session:
// a session could land in parts) under the fence, with the CRC32C of body
// for the service to check. The answer carries the new generation and the
// update time by the service's clock, with millisecond precision.
func (s *Store) put(ctx context.Context, action, key string, body []byte, c cond) (objstore.Object, error) {
	name, err := s.name(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, err)
	}
	var a *storage.Object
	err = objstore.Fenced(ctx, func(rctx context.Context) error {
		call := s.client.Objects.Insert(s.loc.Bucket, &storage.Object{Name: name, Crc32c: crc32cOf(body)}).
			Context(rctx).Fields(objectFields).
			Media(bytes.NewReader(body), googleapi.ContentType("application/octet-stream"), googleapi.ChunkSize(0))
		if c.set {
			call = call.IfGenerationMatch(c.gen)
		}
		var err error
		a, err = call.Do()
		return err
	})
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, mapError(err))
	}
	obj, err := objectOf(key, a)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("%s %s: %w", action, key, err)
	}
	return obj, nil
}

// Delete removes key; a missing key counts as deleted.
func (s *Store) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	err = s.delete(ctx, s.client.Objects.Delete(s.loc.Bucket, name))
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// DeleteIfMatch removes key only if its current generation is etag. The
// request carries the precondition (ifGenerationMatch, which GCS answers
// with 412) and names the generation itself (generation=N, which GCS
// answers with 404 once that generation is no longer live). The second is
// redundant on GCS, whose buckets keep no noncurrent versions unless
// versioning is on (and then the precondition, checked first, still
// protects the live object); fake-gcs-server ignores delete preconditions
// but honours the generation, so the emulator's runs test a real
// conditional delete. A 404 is told apart by reading the key: another
// generation there is objstore.ErrPrecondition, none ErrNotFound.
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	name, err := s.name(key)
	if err != nil {
		return fmt.Errorf("delete if match %s: %w", key, err)
	}
	gen, ok := generationOf(etag)
	if !ok {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete if match %s: %w", key, err)
		}
		return s.mismatch(ctx, "delete if match", key)
	}
	err = s.delete(ctx, s.client.Objects.Delete(s.loc.Bucket, name).Generation(gen).IfGenerationMatch(gen))
	if errors.Is(err, objstore.ErrNotFound) {
		if _, herr := s.Head(ctx, key); herr == nil {
			err = fmt.Errorf("%w: generation %d is no longer live", objstore.ErrPrecondition, gen)
		}
	}
	if err != nil {
		return fmt.Errorf("delete if match %s: %w", key, err)
	}
	return nil
}

// delete sends one DELETE under the fence.
func (s *Store) delete(ctx context.Context, call *storage.ObjectsDeleteCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return mapError(objstore.Fenced(ctx, func(rctx context.Context) error { return call.Context(rctx).Do() }))
}
