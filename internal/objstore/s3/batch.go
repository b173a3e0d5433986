package s3

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns batch deletes, and the keys a batch cannot delete. S3 and
// the servers reaper meets accept keys that XML 1.0 cannot carry (control
// characters other than tab, newline and carriage return, bytes that are
// not UTF-8). DeleteObjects names its keys in an XML body, and the SDK's
// encoder writes U+FFFD for each such character: the server deletes a key
// that does not exist, counts it as deleted, and the real object stays for
// good. Such keys go one by one through DeleteObject, which names its key
// in the URL path. So does a key the batch answered with a permanent
// per-key error (see retryAlone), in case it was the batch that could not
// carry it; only what still fails alone is reported.

// DeleteBatch removes up to objstore.MaxBatchDelete keys: one DeleteObjects
// request for the keys XML can carry, then one DeleteObject for each key it
// cannot and each key the batch failed permanently (see retryAlone), every
// request under the fence. The limit is checked here because some servers (versitygw) accept
// larger batches that AWS rejects. Keys that fail come back in a
// *objstore.BatchError, each with its own error: a transient per-key error
// of the batch (the retry wrapper resends those keys), or the error of the
// key's own delete.
func (s *Store) DeleteBatch(ctx context.Context, keys []string) error {
	all := keys
	keys, refused, err := objstore.CheckBatch(keys)
	if err != nil {
		return err
	}
	var batch, alone []string
	for _, k := range keys {
		if xmlCarries(s.root + k) {
			batch = append(batch, k)
		} else {
			alone = append(alone, k)
		}
	}
	failed := refused
	if len(batch) > 0 {
		perKey, err := s.deleteObjects(ctx, batch)
		if err != nil {
			return objstore.BatchResult(refused, keys, err)
		}
		for _, f := range perKey {
			if retryAlone(f) {
				alone = append(alone, f.Key)
			} else {
				failed = append(failed, f.KeyError)
			}
		}
	}
	failed = append(failed, s.deleteAlone(ctx, alone)...)
	if len(failed) > 0 {
		inKeyOrder(failed, all)
		return &objstore.BatchError{Failed: failed}
	}
	return nil
}

// inKeyOrder sorts failures in the order their keys were given, so a report
// reads like the batch; a key the batch did not name goes last.
func inKeyOrder(failed []objstore.KeyError, keys []string) {
	pos := make(map[string]int, len(keys))
	for i, k := range keys {
		pos[k] = i
	}
	at := func(k string) int {
		if i, ok := pos[k]; ok {
			return i
		}
		return len(keys)
	}
	slices.SortStableFunc(failed, func(a, b objstore.KeyError) int { return at(a.Key) - at(b.Key) })
}

// keyFailure is one per-key error of a DeleteObjects answer; named tells
// whether the server echoed one of the keys the batch named, so that the
// key can be deleted alone.
type keyFailure struct {
	objstore.KeyError
	named bool
}

// retryAlone tells whether a key the batch failed is worth its own delete:
// a permanent failure of a key the batch named, where the batch may have
// been what could not carry it. A transient one goes back to the retry
// wrapper, which resends it in a batch; AccessDenied is about permission,
// not the key's form, and a single delete would be denied the same way (a
// denying policy would otherwise cost a request per key of every batch).
func retryAlone(f keyFailure) bool {
	return f.named && !IsTransient(f.Err) && errorCode(f.Err) != "AccessDenied"
}

// deleteObjects sends one DeleteObjects request and returns its per-key
// failures (a missing key counts as deleted).
func (s *Store) deleteObjects(ctx context.Context, keys []string) ([]keyFailure, error) {
	ids := make([]types.ObjectIdentifier, len(keys))
	requested := make(map[string]string, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(s.root + k)}
		requested[s.root+k] = k
	}
	in := &s3.DeleteObjectsInput{
		Bucket: aws.String(s.loc.Bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	}
	var out *s3.DeleteObjectsOutput
	err := objstore.Fenced(ctx, func(rctx context.Context) (err error) {
		out, err = s.client.DeleteObjects(rctx, in, s.observe(nil))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("delete batch of %d keys: %w", len(keys), mapError(err))
	}
	var failed []keyFailure
	for _, e := range out.Errors {
		code := aws.ToString(e.Code)
		if code == "NoSuchKey" {
			continue // missing keys count as deleted
		}
		echoed := aws.ToString(e.Key)
		key, named := requested[echoed]
		if !named {
			key = s.rel(echoed)
		}
		failed = append(failed, keyFailure{
			KeyError: objstore.KeyError{Key: key, Err: &smithy.GenericAPIError{Code: code, Message: aws.ToString(e.Message)}},
			named:    named,
		})
	}
	return failed, nil
}

// deleteAlone deletes each key with its own fenced DeleteObject. Once the
// fence refuses or ctx ends, the remaining keys fail with that error, and
// nothing more is sent.
func (s *Store) deleteAlone(ctx context.Context, keys []string) []objstore.KeyError {
	var failed []objstore.KeyError
	for i, k := range keys {
		err := s.Delete(ctx, k)
		if errors.Is(err, objstore.ErrFenced) || (err != nil && ctx.Err() != nil) {
			for _, rest := range keys[i:] {
				failed = append(failed, objstore.KeyError{Key: rest, Err: err})
			}
			return failed
		}
		if err != nil {
			failed = append(failed, objstore.KeyError{Key: k, Err: err})
		}
	}
	return failed
}

// xmlCarries reports whether key survives an XML 1.0 body unchanged: valid
// UTF-8 of characters XML allows (the SDK escapes tab, newline and carriage
// return as character references, which parsers restore).
func xmlCarries(key string) bool {
	if !utf8.ValidString(key) {
		return false
	}
	for _, r := range key {
		if !xmlChar(r) {
			return false
		}
	}
	return true
}

// xmlChar is XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
