package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// A conditional write whose attempt failed transiently (a timeout, a 503
// after the body was sent, a dropped connection) may still have landed. Its
// retry then loses to our own write: PutIfAbsent finds the key present,
// PutIfMatch finds a new ETag, DeleteIfMatch finds no key. So after a
// retried attempt (never on the first) ends in such a conflict the wrapper
// reconciles:
//
//   - PutIfAbsent, PutIfMatch: re-read the key; if the stored body equals
//     ours byte for byte, our write landed and the call succeeds with the
//     stored object. Callers put a nonce (owner token, generation) in every
//     body, so equal bytes mean our write, not a concurrent identical one.
//     Otherwise the precondition error is returned: another writer won.
//     If the re-read itself fails, the outcome is unknown and the error
//     says so without claiming ErrPrecondition.
//   - DeleteIfMatch: ErrNotFound on a retry means the version we targeted is
//     gone (our delete landed, or another deleter removed it); either way the
//     caller's intent holds, so the call succeeds. ErrPrecondition is
//     returned as is: a new version exists that we did not target.

// PutIfAbsent retries transient failures and reconciles a retry's conflict.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	var obj objstore.Object
	attempts, err := s.do(ctx, "put if absent", key, func(ctx context.Context) (err error) {
		obj, err = s.inner.PutIfAbsent(ctx, key, body)
		return err
	})
	if attempts > 1 && errors.Is(err, objstore.ErrPrecondition) {
		return s.reconcilePut(ctx, "put if absent", key, body, err)
	}
	return obj, err
}

// PutIfMatch retries transient failures and reconciles a retry's conflict.
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	var obj objstore.Object
	attempts, err := s.do(ctx, "put if match", key, func(ctx context.Context) (err error) {
		obj, err = s.inner.PutIfMatch(ctx, key, body, etag)
		return err
	})
	if attempts > 1 && errors.Is(err, objstore.ErrPrecondition) {
		return s.reconcilePut(ctx, "put if match", key, body, err)
	}
	return obj, err
}

// DeleteIfMatch retries transient failures; a retry finding the key gone
// succeeds (see above).
func (s *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	attempts, err := s.do(ctx, "delete if match", key, func(ctx context.Context) error {
		return s.inner.DeleteIfMatch(ctx, key, etag)
	})
	if attempts > 1 && errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// reconcilePut decides whether a conditional put that conflicted on a retry
// had in fact landed on an earlier attempt.
func (s *Store) reconcilePut(ctx context.Context, op, key string, body []byte, conflict error) (objstore.Object, error) {
	// Larger than body, the stored object cannot be ours: not read.
	stored, obj, err := s.Get(ctx, key, max(int64(len(body)), 1))
	switch {
	case err == nil && bytes.Equal(stored, body):
		return obj, nil
	case err == nil, errors.Is(err, objstore.ErrNotFound), errors.Is(err, objstore.ErrTooLarge):
		return objstore.Object{}, conflict
	default:
		return objstore.Object{}, fmt.Errorf("%s %q: outcome unknown after a retried attempt: re-read: %w", op, key, err)
	}
}
