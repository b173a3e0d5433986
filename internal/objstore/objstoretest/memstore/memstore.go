// Package memstore is an in-memory objstore.Store for tests: the first
// backend the conformance suite runs on, so that contract bugs show before
// any I/O noise, and the store of tests that need no real one. Only tests
// import it (internal/layering_test.go).
package memstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Store is an in-memory objstore.Store. It is safe for concurrent use;
// every write gets a fresh random ETag.
type Store struct {
	// PageSize caps entries per listing page; set it before first use.
	// Zero means objstore.DefaultPageSize.
	PageSize int
	// Clock is the store's clock (LastModified and Now); nil means
	// time.Now. Set it before first use.
	Clock func() time.Time

	mu      sync.Mutex
	objects map[string]entry
}

type entry struct {
	body []byte
	meta objstore.Object
}

var _ objstore.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New() *Store {
	return &Store{objects: make(map[string]entry)}
}

// URI names the store; it has no location.
func (m *Store) URI() string { return "memory://" }

func (m *Store) pageSize() int {
	if m.PageSize > 0 {
		return m.PageSize
	}
	return objstore.DefaultPageSize
}

// sortedKeys snapshots the keys under prefix, so callbacks run without the
// lock held.
func (m *Store) sortedKeys(prefix string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// List lists one level under prefix, counting objects and prefixes toward
// the page size as S3 does.
func (m *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if err := checkListing(ctx, prefix); err != nil {
		return err
	}
	var page objstore.Page
	lastPrefix := ""
	for _, k := range m.sortedKeys(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i := strings.IndexByte(k[len(prefix):], '/'); i >= 0 {
			p := k[:len(prefix)+i+1]
			if p == lastPrefix {
				continue
			}
			lastPrefix = p
			page.Prefixes = append(page.Prefixes, p)
		} else if obj, ok := m.lookup(k); ok {
			page.Objects = append(page.Objects, obj)
		}
		if len(page.Objects)+len(page.Prefixes) == m.pageSize() {
			if err := fn(page); err != nil {
				return err
			}
			page = objstore.Page{}
		}
	}
	if len(page.Objects)+len(page.Prefixes) > 0 {
		return fn(page)
	}
	return nil
}

// Walk streams every object under prefix in pages.
func (m *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	if err := checkListing(ctx, prefix); err != nil {
		return err
	}
	var page []objstore.Object
	for _, k := range m.sortedKeys(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if obj, ok := m.lookup(k); ok {
			page = append(page, obj)
		}
		if len(page) == m.pageSize() {
			if err := fn(page); err != nil {
				return err
			}
			page = nil
		}
	}
	if len(page) > 0 {
		return fn(page)
	}
	return nil
}

func checkListing(ctx context.Context, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return objstore.ValidatePrefix(prefix)
}

func (m *Store) lookup(key string) (objstore.Object, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	return o.meta, ok
}

// checkKey validates an object key; a trailing "/" would name a prefix, not
// an object.
func checkKey(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.HasSuffix(key, "/") {
		return fmt.Errorf("%w: %q ends in \"/\"", objstore.ErrInvalidKey, key)
	}
	return objstore.ValidateKey(key)
}

// Get returns a copy of the object's bytes.
func (m *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, objstore.Object{}, err
	}
	if err := objstore.CheckLimit(key, limit); err != nil {
		return nil, objstore.Object{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	if int64(len(o.body)) > limit {
		return nil, objstore.Object{}, &objstore.TooLargeError{Key: key, Size: int64(len(o.body)), Limit: limit}
	}
	return slices.Clone(o.body), o.meta, nil
}

// Head returns the object's metadata.
func (m *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	obj, ok := m.lookup(key)
	if !ok {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, objstore.ErrNotFound)
	}
	return obj, nil
}

// checkMutation validates key and asks ctx's fence, as every backend does
// before a mutating request.
func checkMutation(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	if _, err := objstore.CheckFence(ctx); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// Now is the store's clock.
func (m *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return m.now(), nil
}

func (m *Store) now() time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Now()
}

// PruneEmpty does nothing: the memory store has no directories.
func (m *Store) PruneEmpty(ctx context.Context, prefix string) error {
	if err := checkListing(ctx, prefix); err != nil {
		return err
	}
	_, err := objstore.CheckFence(ctx)
	return err
}

// Put stores a copy of body.
func (m *Store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkMutation(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeLocked(key, body), nil
}

// PutIfAbsent stores body only if key does not exist.
func (m *Store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := checkMutation(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return objstore.Object{}, fmt.Errorf("put if absent %s: %w", key, objstore.ErrPrecondition)
	}
	return m.storeLocked(key, body), nil
}

// PutIfMatch replaces key only if its ETag is etag.
func (m *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if err := checkMutation(ctx, key); err != nil {
		return objstore.Object{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.matchLocked("put if match", key, etag); err != nil {
		return objstore.Object{}, err
	}
	return m.storeLocked(key, body), nil
}

// Delete removes key; a missing key is not an error.
func (m *Store) Delete(ctx context.Context, key string) error {
	if err := checkMutation(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

// DeleteIfMatch removes key only if its ETag is etag.
func (m *Store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	if err := checkMutation(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.matchLocked("delete if match", key, etag); err != nil {
		return err
	}
	delete(m.objects, key)
	return nil
}

// DeleteBatch removes keys; only a key its grammar refuses fails alone.
func (m *Store) DeleteBatch(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	valid, refused, err := objstore.CheckBatchWith(keys, func(k string) error { return checkKey(ctx, k) })
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	if _, err := objstore.CheckFence(ctx); err != nil {
		return objstore.BatchResult(refused, valid, fmt.Errorf("delete batch: %w", err))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range valid {
		delete(m.objects, k)
	}
	return objstore.BatchResult(refused, valid, nil)
}

func (m *Store) matchLocked(action, key, etag string) error {
	o, ok := m.objects[key]
	switch {
	case !ok:
		return fmt.Errorf("%s %s: %w", action, key, objstore.ErrNotFound)
	case o.meta.ETag != etag:
		return fmt.Errorf("%s %s: current etag %q, not %q: %w", action, key, o.meta.ETag, etag, objstore.ErrPrecondition)
	}
	return nil
}

func (m *Store) storeLocked(key string, body []byte) objstore.Object {
	meta := objstore.Object{Key: key, Size: int64(len(body)), ETag: rand.Text(), LastModified: m.now()}
	m.objects[key] = entry{body: slices.Clone(body), meta: meta}
	return meta
}
