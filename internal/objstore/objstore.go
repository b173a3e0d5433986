// Package objstore is reaper's view of object storage: one small Store
// interface over keys, bytes and ETags, the sentinel errors every backend maps
// its failures to, the descriptor each backend gives of itself (Backend: its
// root-URI forms, storage options, error classes) and what every root URI
// shares. It knows nothing about tables, markers or TTLs, and no backend by
// name: backends live in subpackages (local, s3, gcs, azure), listed once in
// package all, and wrappers (retries, metrics, tracing) wrap a Store without
// changing its contract.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxBatchDelete is the largest number of keys DeleteBatch accepts in one
// call: S3's DeleteObjects limit, enforced client-side on every backend.
const MaxBatchDelete = 1000

// DefaultPageSize is the listing page size backends use unless configured:
// S3's maximum per ListObjectsV2 call.
const DefaultPageSize = 1000

// TimeResolution is the coarsest a store's clock may read: S3 reports
// LastModified and its Date header in whole seconds. A comparison of store
// times that allows a deletion or a lease takeover adds it against itself.
const TimeResolution = time.Second

// Sentinel errors. Backends wrap them with %w so callers branch with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrPrecondition: a conditional write or delete lost (the key exists for
	// PutIfAbsent, or its ETag differs for PutIfMatch/DeleteIfMatch).
	ErrPrecondition = errors.New("precondition failed")
	// ErrInvalidKey: the key is empty, absolute, or has an empty, "." or ".."
	// segment.
	ErrInvalidKey = errors.New("invalid key")
	// ErrTooLarge: Get found the object larger than the caller's limit and
	// did not read it (a *TooLargeError says how large).
	ErrTooLarge = errors.New("object larger than the read limit")
	// ErrIsFolder: the key names a folder, not an object. Only stores that
	// can tell in the same request (local: a directory, even an empty one)
	// say so, and always together with ErrNotFound.
	ErrIsFolder = errors.New("the key names a folder")
	// ErrRootChanged: the root no longer names the directory the store
	// opened and checked (a symbolic link repointed, a directory swapped in
	// with mv); nothing was done through it. A *RootChangedError says what
	// changed.
	ErrRootChanged = errors.New("the root changed")
	// ErrMountPoint: a walk, delete or prune met an entry on another mount
	// than the root's (a file system or a bind mount mounted inside the
	// root) and did not cross it.
	ErrMountPoint = errors.New("mount point")
	// ErrNotEmpty: PruneEmpty met an object below its prefix (or one written
	// there meanwhile) and removed nothing of what holds it.
	ErrNotEmpty = errors.New("the directory is not empty")
)

// Object describes one stored object.
type Object struct {
	// Key is relative to the store's root, with "/" separators.
	Key string
	// Size in bytes.
	Size int64
	// ETag identifies one written version of the object: a write of
	// different bytes always changes it; a write of identical bytes may keep
	// it (S3 derives it from the body's MD5), so a compare-and-swap protocol
	// puts a nonce in every body (local: inode, mtime and size; S3: the
	// server's ETag, quotes stripped). Listings may leave it empty; Head, Get
	// and the Put methods always set it.
	ETag string
	// LastModified is the time of the last write by the store's own clock
	// (see Store.Now), possibly truncated by up to TimeResolution. The local
	// backend reports the later of mtime and ctime, so a file copied in with
	// its old mtime preserved still shows when it arrived.
	LastModified time.Time
}

// Page is one page of a one-level listing.
type Page struct {
	// Objects directly under the prefix, sorted by key.
	Objects []Object
	// Prefixes are the "sub-directories" directly under the prefix, each the
	// full key prefix ending in "/", sorted.
	Prefixes []string
}

// Store is the contract every backend and wrapper implements. Keys are
// relative to the store's root URI and use "/" as separator.
//
// The clauses below are each exercised by objstoretest.Run:
//   - List lists exactly one level under prefix (delimiter "/"), in pages, in
//     lexicographic key order, calling fn once per page; a prefix is a
//     directory-like string ending in "/" or "" for the root. The order
//     holds for objects and prefixes together across pages: every entry of
//     a page sorts after every entry of the pages before (a status streams
//     a root on it, lifecycle/scan_window.go).
//   - Walk streams every object under prefix at any depth, page by page in
//     lexicographic key order; it never holds the whole listing in memory.
//     The local backend keeps that order within directories of up to 10,000
//     entries and streams larger ones in directory order (holding a million
//     names to sort them would defeat streaming); it never retries a walk.
//   - If fn returns an error, List and Walk stop and return it unchanged.
//   - Get and Head return ErrNotFound for a missing key. For a key that
//     names a folder they return ErrNotFound too; a store that can tell
//     without another request (local: a directory, even an empty one)
//     also wraps ErrIsFolder, so a switch set by creating a folder (a
//     legal hold made with mkdir) is never read as absent.
//   - Get reads at most limit bytes (limit > 0): a larger object is not
//     read, and the error wraps ErrTooLarge. Every caller states how large
//     an object it expects, so a huge or hostile object (a multi-GB marker)
//     costs neither the process's memory nor the pass.
//   - Put replaces atomically: a reader sees the old or the new bytes, never a
//     mix. Put creates missing parent "directories". Unconditional writes and
//     the conditional ones are atomic with respect to each other.
//   - A key is an object or a "directory", never both: filesystems (and
//     versitygw's posix backend) cannot hold "a" and "a/x" at once. Callers
//     never rely on it; reaper's layout never needs it.
//   - PutIfAbsent returns ErrPrecondition when the key exists; two concurrent
//     callers (also in different processes) never both succeed.
//   - PutIfMatch replaces only when the current ETag equals etag; it returns
//     ErrPrecondition on a different ETag and ErrNotFound on a missing key.
//   - Delete of a missing key succeeds.
//   - DeleteIfMatch deletes only when the current ETag equals etag;
//     ErrPrecondition on a different ETag. On a missing key it returns
//     ErrNotFound where the store can tell (memory, local, AWS S3); some S3
//     servers (versitygw) answer success, so callers treat both as "gone".
//   - DeleteBatch deletes up to MaxBatchDelete keys (more is an error before any
//     request); missing keys count as deleted; per-key failures are returned
//     as a *BatchError listing each failed key. A key the store refuses by
//     its grammar (ErrInvalidKey) fails alone: the other keys are deleted.
//   - Now reads the store's clock: the clock LastModified is stamped with. It
//     is a lower bound: the store's clock is no earlier than the time returned
//     (up to TimeResolution) when Now returns. It may cost a request.
//   - PruneEmpty removes the empty directories at and below prefix (ending in
//     "/"), deepest first, on stores that have directories (local); it never
//     removes an object or a directory that holds one, and returns an error
//     naming the first entry it could not remove. Elsewhere it does nothing.
//   - Every mutating call (Put*, Delete*, PruneEmpty) made with a context that
//     carries a Fence (WithFence) asks it immediately before each request it
//     sends (local: before each syscall that changes the tree) and fails with
//     ErrFenced, sending nothing more, once the fence refuses.
//   - A backend that deletes a batch key by key (local: an unlink per key;
//     GCS: a request per key) asks the context (done: stop) and its
//     between-keys check (WithBetweenKeys) before each key, and deletes
//     nothing more of the call once either refuses; the keys not deleted
//     fail wrapping the refusal. One that sends a batch as one request (S3,
//     Azure) asks neither between keys.
//   - Local roots never follow a symbolic link below the root: a link is an
//     object (listed, walked and deleted as the link itself); a link where a
//     directory is expected is never entered.
//   - Local roots act on the one root directory the store opened: once the
//     root path names another directory (a symlink flip, a directory swapped
//     in with mv) or nothing, every call fails with ErrRootChanged, having
//     read and changed nothing through it. A new store adopts what the path
//     names then.
type Store interface {
	List(ctx context.Context, prefix string, fn func(Page) error) error
	Walk(ctx context.Context, prefix string, fn func([]Object) error) error
	Get(ctx context.Context, key string, limit int64) ([]byte, Object, error)
	Head(ctx context.Context, key string) (Object, error)
	Put(ctx context.Context, key string, body []byte) (Object, error)
	PutIfAbsent(ctx context.Context, key string, body []byte) (Object, error)
	PutIfMatch(ctx context.Context, key string, body []byte, etag string) (Object, error)
	Delete(ctx context.Context, key string) error
	DeleteIfMatch(ctx context.Context, key string, etag string) error
	DeleteBatch(ctx context.Context, keys []string) error
	Now(ctx context.Context) (time.Time, error)
	PruneEmpty(ctx context.Context, prefix string) error
	// URI is the root URI the store was opened with, without secrets.
	URI() string
}

// KeyError is one failed key inside a batch delete.
type KeyError struct {
	Key string
	Err error
}

// BatchError reports the keys a DeleteBatch could not delete; the other keys
// of the batch were deleted.
type BatchError struct {
	Failed []KeyError
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch delete: %d key(s) failed", len(e.Failed))
	for i, f := range e.Failed {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-3)
			break
		}
		fmt.Fprintf(&b, "; %s: %v", f.Key, f.Err)
	}
	return b.String()
}

// Unwrap exposes the per-key errors to errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// ValidateKey checks the key grammar shared by all backends.
func ValidateKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsRune(key, 0) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// ValidatePrefix checks a listing prefix: "" (the root) or a key grammar
// prefix. A prefix need not end in "/".
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return ValidateKey(prefix)
}

// CheckBatch enforces the MaxBatchDelete limit before any request is sent
// (err), and splits off the keys the shared grammar refuses: each fails
// alone, and a backend deletes the valid ones. One odd key must not block
// a whole batch, or a purge would stop at every batch that holds it.
func CheckBatch(keys []string) (valid []string, refused []KeyError, err error) {
	return CheckBatchWith(keys, ValidateKey)
}

// CheckBatchWith is CheckBatch with a backend's own key check.
func CheckBatchWith(keys []string, check func(string) error) (valid []string, refused []KeyError, err error) {
	if len(keys) > MaxBatchDelete {
		return nil, nil, fmt.Errorf("batch delete of %d keys: at most %d per request", len(keys), MaxBatchDelete)
	}
	valid = keys
	for i, k := range keys {
		if err := check(k); err != nil {
			if len(refused) == 0 {
				valid = append([]string(nil), keys[:i]...)
			}
			refused = append(refused, KeyError{Key: k, Err: fmt.Errorf("delete %q: %w", k, err)})
			continue
		}
		if len(refused) > 0 {
			valid = append(valid, k)
		}
	}
	return valid, refused, nil
}

// BatchResult is the error of a batch whose refused keys failed alone
// beside err, the error of deleting the valid ones (nil, a *BatchError or
// a whole-request error, which then stands for every valid key).
func BatchResult(refused []KeyError, valid []string, err error) error {
	if len(refused) == 0 {
		return err
	}
	failed := refused
	var be *BatchError
	switch {
	case err == nil:
	case errors.As(err, &be):
		failed = append(failed, be.Failed...)
	default:
		for _, k := range valid {
			failed = append(failed, KeyError{Key: k, Err: err})
		}
	}
	return &BatchError{Failed: failed}
}
