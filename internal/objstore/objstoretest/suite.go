// Package objstoretest holds the one conformance suite every objstore.Store
// backend and wrapper runs, so the contract written on the interface is
// checked in one place (memory, local, local under a prefix, S3, wrappers).
// It is a non-test package so other packages' tests can import it; it must
// never be imported by production code.
package objstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultPageSize is the listing page size the suite assumes when no
// WithPageSize option is given: S3's maximum and the backends' default.
const DefaultPageSize = objstore.DefaultPageSize

// Option tunes the suite for one backend.
type Option func(*config)

type config struct {
	pageSize int
	racers   int
}

// WithPageSize tells the suite the store's listing page size. The paging
// clauses write two and a half pages of objects, so a backend opened with a
// small page size keeps those clauses fast while still crossing pages.
func WithPageSize(n int) Option {
	return func(c *config) { c.pageSize = n }
}

// WithRacers sets how many goroutines race in the concurrency clauses
// (default 16).
func WithRacers(n int) Option {
	return func(c *config) { c.racers = n }
}

type clause struct {
	name string
	fn   func(t *testing.T, s objstore.Store, cfg config)
}

// Run runs every contract clause as its own named subtest, each against a
// fresh store from newStore. Subtests run sequentially, so newStore needs no
// locking and cleanup registered on the outer t runs after all of them.
func Run(t *testing.T, newStore func(t *testing.T) objstore.Store, opts ...Option) {
	t.Helper()
	cfg := config{pageSize: DefaultPageSize, racers: 16}
	for _, o := range opts {
		o(&cfg)
	}
	require.Positive(t, cfg.pageSize, "page size")
	require.Positive(t, cfg.racers, "racers")
	for _, group := range [][]clause{listClauses, readWriteClauses, conditionalClauses, deleteClauses, keyClauses, fenceClauses} {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) {
				s := newStore(t)
				require.NotNil(t, s, "newStore returned nil")
				c.fn(t, s, cfg)
			})
		}
	}
}

// NewTestPrefix returns a random "reaper-test-<hex>/" key prefix, so runs
// against shared storage never touch each other's (or real) data.
func NewTestPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "reaper-test-" + hex.EncodeToString(b[:]) + "/"
}

// putMany writes each key with its own name as body.
func putMany(t *testing.T, s objstore.Store, keys []string) {
	t.Helper()
	PutAll(t, s, keys, func(k string) []byte { return []byte(k) })
}

// PutAll writes every key with body(key), from sixteen goroutines so
// backends with per-write fsyncs or round trips stay fast, and fails the
// test on any error.
func PutAll(t testing.TB, s objstore.Store, keys []string, body func(key string) []byte) {
	t.Helper()
	ctx := context.Background()
	work := make(chan string)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if _, err := s.Put(ctx, k, body(k)); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "put")
	}
}

// put writes one object and fails the test on error.
func put(t *testing.T, s objstore.Store, key, body string) objstore.Object {
	t.Helper()
	obj, err := s.Put(t.Context(), key, []byte(body))
	require.NoError(t, err, "put %s", key)
	return obj
}

// requireBody checks that key holds want.
func requireBody(t *testing.T, s objstore.Store, key, want string) objstore.Object {
	t.Helper()
	got, obj, err := s.Get(t.Context(), key, 1<<20)
	require.NoError(t, err, "get %s", key)
	require.Equal(t, want, string(got), "body of %s: got/want", key)
	return obj
}

// requireMissing checks that Head reports key as not found.
func requireMissing(t *testing.T, s objstore.Store, key string) {
	t.Helper()
	_, err := s.Head(t.Context(), key)
	require.ErrorIs(t, err, objstore.ErrNotFound, "head %s: got %v, want ErrNotFound", key, err)
}

// listAll collects every page of a one-level listing.
func listAll(t *testing.T, s objstore.Store, prefix string) (objs []objstore.Object, prefixes []string, pages []objstore.Page) {
	t.Helper()
	err := s.List(t.Context(), prefix, func(p objstore.Page) error {
		pages = append(pages, p)
		objs = append(objs, p.Objects...)
		prefixes = append(prefixes, p.Prefixes...)
		return nil
	})
	require.NoError(t, err, "list %q", prefix)
	return objs, prefixes, pages
}

// walkAll collects every page of a recursive listing.
func walkAll(t *testing.T, s objstore.Store, prefix string) (objs []objstore.Object, pages [][]objstore.Object) {
	t.Helper()
	err := s.Walk(t.Context(), prefix, func(p []objstore.Object) error {
		pages = append(pages, p)
		objs = append(objs, p...)
		return nil
	})
	require.NoError(t, err, "walk %q", prefix)
	return objs, pages
}

func keysOf(objs []objstore.Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// cancelled returns an already cancelled context.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
