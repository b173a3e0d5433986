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
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/googleapi"
	storage "google.golang.org/api/storage/v1"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultPageSize is the maxResults of a listing request: GCS's own
// maximum, and the same as S3's.
const DefaultPageSize = 1000

// Store is an objstore.Store over one bucket and object-name prefix.
type Store struct {
	client *storage.Service
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

// Close releases nothing: the JSON API client holds no connections of its
// own (the transport's pool belongs to whoever lent it, or to net/http).
func (s *Store) Close() error { return nil }

func (s *Store) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return DefaultPageSize
}

// List lists one level under prefix, one fn call per non-empty response
// page (an empty listing calls fn never), objects and prefixes together in
// key order across pages, as the Store contract says. GCS sends each
// prefix once, in that order; fake-gcs-server repeats every prefix on
// every page, ahead of objects listed on later pages. So a prefix not
// after the last one received is dropped, and one after the last object
// of a page that has a next page is held for the next (a status streams
// the root and judges a name complete by the key order: scan_window.go).
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	last := ""
	var held []string
	return s.listPages(ctx, "list", prefix, "/", func(res *storage.Objects) error {
		var page objstore.Page
		for _, a := range res.Items {
			o, ok, err := s.object(a)
			if err != nil {
				return fmt.Errorf("list %s: %w", prefix, err)
			}
			if ok {
				page.Objects = append(page.Objects, o)
			}
		}
		for _, p := range res.Prefixes {
			if p := s.rel(p); p != "" && p > last {
				held = append(held, p)
				last = p
			}
		}
		cut := len(held)
		if res.NextPageToken != "" && len(page.Objects) > 0 {
			cut, _ = slices.BinarySearch(held, page.Objects[len(page.Objects)-1].Key)
		}
		page.Prefixes = held[:cut:cut]
		held = slices.Clone(held[cut:])
		return s.deliver(page, fn)
	})
}

// deliver hands one response page to fn in pages of at most pageSize
// entries, in key order. GCS counts prefixes toward maxResults, so its
// pages already fit; fake-gcs-server adds its prefixes on top of
// maxResults objects.
func (s *Store) deliver(page objstore.Page, fn func(objstore.Page) error) error {
	n := s.pageSize()
	for len(page.Objects)+len(page.Prefixes) > 0 {
		var out objstore.Page
		for len(out.Objects)+len(out.Prefixes) < n && len(page.Objects)+len(page.Prefixes) > 0 {
			if len(page.Prefixes) > 0 && (len(page.Objects) == 0 || page.Prefixes[0] < page.Objects[0].Key) {
				out.Prefixes, page.Prefixes = append(out.Prefixes, page.Prefixes[0]), page.Prefixes[1:]
			} else {
				out.Objects, page.Objects = append(out.Objects, page.Objects[0]), page.Objects[1:]
			}
		}
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
	return s.listPages(ctx, "walk", prefix, "", func(res *storage.Objects) error {
		objs := make([]objstore.Object, 0, len(res.Items))
		for _, a := range res.Items {
			o, ok, err := s.object(a)
			if err != nil {
				return fmt.Errorf("walk %s: %w", prefix, err)
			}
			if ok {
				objs = append(objs, o)
			}
		}
		if len(objs) == 0 {
			return nil
		}
		return fn(objs)
	})
}

// listFields are the fields a listing asks for: no ACLs, no metadata.
const listFields = "nextPageToken,prefixes,items(name,size,generation,updated)"

// objectFields are the fields a metadata read asks for.
const objectFields = "size,generation,updated"

// listPages follows page tokens, one request per page; errors from fn pass
// through unchanged, as the Store contract requires.
func (s *Store) listPages(ctx context.Context, action, prefix, delimiter string, fn func(*storage.Objects) error) error {
	token := ""
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s %s: %w", action, prefix, err)
		}
		call := s.client.Objects.List(s.loc.Bucket).Context(ctx).Prefix(s.root + prefix).
			MaxResults(int64(s.pageSize())).Fields(listFields)
		if delimiter != "" {
			call = call.Delimiter(delimiter)
		}
		if token != "" {
			call = call.PageToken(token)
		}
		res, err := call.Do()
		if err != nil {
			return fmt.Errorf("%s %s: %w", action, prefix, listError(err))
		}
		if err := fn(res); err != nil {
			return err
		}
		if token = res.NextPageToken; token == "" {
			return nil
		}
	}
}

// listError keeps a listing's 404 (a missing bucket) from reading as a
// missing key: a listing has no such thing.
func listError(err error) error {
	if httpStatus(err) == 404 {
		return fmt.Errorf("bucket not found: %w", err)
	}
	return mapError(err)
}

// object converts one listed entry, dropping the root's own placeholder.
func (s *Store) object(a *storage.Object) (objstore.Object, bool, error) {
	key := s.rel(a.Name)
	if key == "" {
		return objstore.Object{}, false, nil
	}
	o, err := objectOf(key, a)
	return o, err == nil, err
}

// objectOf converts the service's description of key.
func objectOf(key string, a *storage.Object) (objstore.Object, error) {
	updated, err := time.Parse(time.RFC3339Nano, a.Updated)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("object %s: updated time %q: %w", key, a.Updated, err)
	}
	return objstore.Object{Key: key, Size: int64(a.Size), ETag: etagOf(a.Generation), LastModified: updated}, nil
}

// rel strips the root prefix from an object name.
func (s *Store) rel(name string) string { return strings.TrimPrefix(name, s.root) }

// name returns the object name of a store key after checking its grammar.
func (s *Store) name(key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", err
	}
	return s.root + key, nil
}

// Get reads a whole object; body and generation come from one response
// (a media download, ?alt=media), and the body is checked against the
// CRC32C the service sends.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	name, err := s.name(key)
	if err == nil {
		err = objstore.CheckLimit(key, limit)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	res, err := s.client.Objects.Get(s.loc.Bucket, name).Context(ctx).Download()
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, mapError(err))
	}
	defer googleapi.CloseBody(res)
	body, err := objstore.ReadLimited(res.Body, key, res.ContentLength, limit)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read %s: %w", key, mapError(err))
	}
	obj, err := downloaded(key, body, res.Header)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	return body, obj, nil
}

// downloaded reads a media download's headers: the generation
// (X-Goog-Generation), the update time (Last-Modified, to the second) and
// the CRC32C of the stored bytes (X-Goog-Hash), which body must match.
func downloaded(key string, body []byte, h http.Header) (objstore.Object, error) {
	gen, err := strconv.ParseInt(h.Get("X-Goog-Generation"), 10, 64)
	if err != nil || gen <= 0 {
		return objstore.Object{}, fmt.Errorf("the answer has no generation (X-Goog-Generation %q)", h.Get("X-Goog-Generation"))
	}
	var modified time.Time
	if lm := h.Get("Last-Modified"); lm != "" {
		if modified, err = http.ParseTime(lm); err != nil {
			return objstore.Object{}, fmt.Errorf("Last-Modified %q: %w", lm, err)
		}
	}
	if hashes := h.Values("X-Goog-Hash"); len(hashes) > 0 && h.Get("Content-Encoding") != "gzip" { // a transcoded body is not the stored bytes
		got := crc32cOf(body)
		for _, v := range hashes {
			for _, part := range strings.Split(v, ",") {
				sum, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c=")
				if ok && sum != got {
					return objstore.Object{}, fmt.Errorf("body of %d bytes does not match the stored CRC32C %s", len(body), sum)
				}
			}
		}
	}
	return objstore.Object{Key: key, Size: int64(len(body)), ETag: etagOf(gen), LastModified: modified}, nil
}

// castagnoli is the CRC32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cOf is the CRC32C of b as GCS writes it: big-endian, base64.
func crc32cOf(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, castagnoli)))
}

// Head reads an object's metadata.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	name, err := s.name(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, err)
	}
	a, err := s.client.Objects.Get(s.loc.Bucket, name).Context(ctx).Fields(objectFields).Do()
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, mapError(err))
	}
	obj, err := objectOf(key, a)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, err)
	}
	return obj, nil
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

// PruneEmpty removes nothing: GCS has no directories (a flat namespace; a
// hierarchical-namespace bucket's folders are not objects and hold none of
// reaper's data).
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	return objstore.PruneFlat(ctx, prefix)
}
