// Package gcs is the objstore.Store backend for Google Cloud Storage,
// rooted at a bucket and object-name prefix. An object's ETag is its
// generation, so conditional writes and deletes map to GCS's native
// preconditions (ifGenerationMatch, 0 for create-if-absent) and lease locks
// work across processes. The client's own retries are off, because a
// retried conditional write may have landed and only the caller's retry
// wrapper can tell (see Open).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultPageSize is the maxResults of a listing request: GCS's own
// maximum, and the same as S3's.
const DefaultPageSize = 1000

// Store is an objstore.Store over one bucket and object-name prefix.
type Store struct {
	client *storage.Client
	loc    objstore.Location
	root   string // loc.Prefix plus "/", or "" for the bucket root

	// PageSize is the maxResults of each listing request (DefaultPageSize
	// when zero); tests lower it to exercise paging.
	PageSize int
	// ClockMaxAge is how old the latest Date may be before Now sends a
	// request for a fresh one (DefaultClockMaxAge when zero).
	ClockMaxAge time.Duration
	// DeleteConcurrency is how many single deletes DeleteBatch keeps in
	// flight (DefaultDeleteConcurrency when zero).
	DeleteConcurrency int

	clock objstore.DateClock // the store's clock, read from every response (clock.go)
}

var _ objstore.Store = (*Store)(nil)

func newStore(loc objstore.Location) *Store {
	root := ""
	if loc.Prefix != "" {
		root = loc.Prefix + "/"
	}
	return &Store{loc: loc, root: root}
}

// URI is the root URI; it never carries credentials.
func (s *Store) URI() string { return s.loc.String() }

// Close releases the client's connections.
func (s *Store) Close() error { return s.client.Close() }

func (s *Store) bucket() *storage.BucketHandle { return s.client.Bucket(s.loc.Bucket) }

func (s *Store) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return DefaultPageSize
}

// List lists one level under prefix, one fn call per non-empty response
// page (an empty listing calls fn never). GCS sends each prefix once, in
// order across pages; fake-gcs-server repeats every prefix on every page,
// so a prefix not after the last one delivered is dropped.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	last := ""
	return s.listPages(ctx, "list", prefix, "/", func(attrs []*storage.ObjectAttrs) error {
		var page objstore.Page
		for _, a := range attrs {
			if a.Prefix != "" {
				if p := s.rel(a.Prefix); p != "" && p > last {
					page.Prefixes = append(page.Prefixes, p)
					last = p
				}
				continue
			}
			if o, ok := s.object(a); ok {
				page.Objects = append(page.Objects, o)
			}
		}
		return s.deliver(page, fn)
	})
}

// deliver hands one response page to fn in pages of at most pageSize
// entries. GCS counts prefixes toward maxResults, so its pages already fit;
// fake-gcs-server adds its prefixes on top of maxResults objects.
func (s *Store) deliver(page objstore.Page, fn func(objstore.Page) error) error {
	n := s.pageSize()
	for len(page.Objects)+len(page.Prefixes) > 0 {
		var out objstore.Page
		k := min(n, len(page.Prefixes))
		out.Prefixes, page.Prefixes = page.Prefixes[:k], page.Prefixes[k:]
		k = min(n-k, len(page.Objects))
		out.Objects, page.Objects = page.Objects[:k], page.Objects[k:]
		if err := fn(out); err != nil {
			return err
		}
	}
	return nil
}

// Walk streams every object under prefix at any depth, one fn call per
// non-empty response page.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("walk %s: %w", prefix, err)
	}
	return s.listPages(ctx, "walk", prefix, "", func(attrs []*storage.ObjectAttrs) error {
		objs := make([]objstore.Object, 0, len(attrs))
		for _, a := range attrs {
			if o, ok := s.object(a); ok {
				objs = append(objs, o)
			}
		}
		if len(objs) == 0 {
			return nil
		}
		return fn(objs)
	})
}

// listAttrs are the fields a listing asks for: no ACLs, no metadata
// (prefixes always come).
var listAttrs = []string{"Name", "Size", "Generation", "Updated"}

// listPages follows page tokens, one request per page; errors from fn pass
// through unchanged, as the Store contract requires.
func (s *Store) listPages(ctx context.Context, action, prefix, delimiter string, fn func([]*storage.ObjectAttrs) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", action, prefix, err)
	}
	q := &storage.Query{Prefix: s.root + prefix, Delimiter: delimiter}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return fmt.Errorf("%s %s: %w", action, prefix, err)
	}
	pager := iterator.NewPager(s.bucket().Objects(ctx, q), s.pageSize(), "")
	for {
		var attrs []*storage.ObjectAttrs
		next, err := pager.NextPage(&attrs)
		if err != nil {
			return fmt.Errorf("%s %s: %w", action, prefix, listError(err))
		}
		if err := fn(attrs); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
	}
}

// listError keeps a listing's 404 (a missing bucket) from reading as a
// missing key: a listing has no such thing.
func listError(err error) error {
	if errors.Is(err, storage.ErrBucketNotExist) || httpStatus(err) == 404 {
		return fmt.Errorf("bucket not found: %w", err)
	}
	return mapError(err)
}

// object converts one listed entry, dropping the root's own placeholder.
func (s *Store) object(a *storage.ObjectAttrs) (objstore.Object, bool) {
	key := s.rel(a.Name)
	if key == "" {
		return objstore.Object{}, false
	}
	return objstore.Object{Key: key, Size: a.Size, ETag: etagOf(a.Generation), LastModified: a.Updated}, true
}

// rel strips the root prefix from an object name.
func (s *Store) rel(name string) string { return strings.TrimPrefix(name, s.root) }

// handle returns the object handle of a store key after checking its
// grammar.
func (s *Store) handle(key string) (*storage.ObjectHandle, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, err
	}
	return s.bucket().Object(s.root + key), nil
}

// Get reads a whole object; body and generation come from one response.
func (s *Store) Get(ctx context.Context, key string) ([]byte, objstore.Object, error) {
	h, err := s.handle(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	r, err := h.NewReader(ctx)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, mapError(err))
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read %s: %w", key, mapError(err))
	}
	return body, objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         etagOf(r.Attrs.Generation),
		LastModified: r.Attrs.LastModified,
	}, nil
}

// Head reads an object's metadata.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	h, err := s.handle(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, err)
	}
	a, err := h.Attrs(ctx)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, mapError(err))
	}
	return objstore.Object{Key: key, Size: a.Size, ETag: etagOf(a.Generation), LastModified: a.Updated}, nil
}

// etagOf renders a generation as the store's ETag. Every write of an
// object, identical bytes included, gets a new generation.
func etagOf(gen int64) string { return strconv.FormatInt(gen, 10) }

// generationOf parses an ETag back; ok is false for anything this store
// cannot have handed out (generations are positive).
func generationOf(etag string) (gen int64, ok bool) {
	gen, err := strconv.ParseInt(etag, 10, 64)
	return gen, err == nil && gen > 0
}
