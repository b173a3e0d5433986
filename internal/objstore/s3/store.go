// Package s3 is the objstore.Store backend for Amazon S3 and S3-compatible
// servers, rooted at a bucket and key prefix. Conditional writes and deletes
// map to If-None-Match / If-Match so lease locks work across processes; the
// SDK's own retries are off, because a retried conditional write may have
// landed and only the caller's retry wrapper can tell (see Open).
package s3

import (
	"context"
	"fmt"

	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultPageSize is the MaxKeys of a listing request: S3's own maximum.
const DefaultPageSize = 1000

// API is the part of *s3.Client the store uses, so tests can wrap or fake it.
type API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

var _ API = (*s3.Client)(nil)

// Store is an objstore.Store over one bucket and key prefix.
type Store struct {
	client API
	loc    objstore.Location
	root   string // loc.Prefix plus "/", or "" for the bucket root

	// PageSize is the MaxKeys of each listing request (DefaultPageSize when
	// zero); tests lower it to exercise paging.
	PageSize int32
	// ClockMaxAge is how old the latest Date may be before Now sends a
	// request for a fresh one (DefaultClockMaxAge when zero).
	ClockMaxAge time.Duration

	clock objstore.DateClock // the store's clock, read from every response (clock.go)
}

var _ objstore.Store = (*Store)(nil)

// New returns a store over client rooted at loc, which must be an s3 location.
func New(client API, loc objstore.Location) *Store {
	root := ""
	if loc.Prefix != "" {
		root = loc.Prefix + "/"
	}
	return &Store{client: client, loc: loc, root: root}
}

// URI is the root URI; it never carries credentials.
func (s *Store) URI() string { return s.loc.String() }

func (s *Store) pageSize() *int32 {
	if s.PageSize > 0 {
		return aws.Int32(s.PageSize)
	}
	return aws.Int32(DefaultPageSize)
}

// List lists one level under prefix, one fn call per non-empty response
// page (an empty listing calls fn never).
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	return s.listPages(ctx, "list", prefix, "/", func(out *s3.ListObjectsV2Output) error {
		page := objstore.Page{Objects: s.objects(out)}
		for _, cp := range out.CommonPrefixes {
			if p := s.rel(aws.ToString(cp.Prefix)); p != "" {
				page.Prefixes = append(page.Prefixes, p)
			}
		}
		if len(page.Objects)+len(page.Prefixes) == 0 {
			return nil
		}
		return fn(page)
	})
}

// Walk streams every object under prefix at any depth, one fn call per
// non-empty response page.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("walk %s: %w", prefix, err)
	}
	return s.listPages(ctx, "walk", prefix, "", func(out *s3.ListObjectsV2Output) error {
		objs := s.objects(out)
		if len(objs) == 0 {
			return nil
		}
		return fn(objs)
	})
}

// listPages follows continuation tokens; errors from fn pass through
// unchanged, as the Store contract requires. Keys reach fn exactly as
// stored, or the listing fails (see exactKeys).
func (s *Store) listPages(ctx context.Context, action, prefix, delimiter string, fn func(*s3.ListObjectsV2Output) error) error {
	in := &s3.ListObjectsV2Input{
		Bucket:       aws.String(s.loc.Bucket),
		Prefix:       aws.String(s.root + prefix),
		MaxKeys:      s.pageSize(),
		EncodingType: types.EncodingTypeUrl,
	}
	if delimiter != "" {
		in.Delimiter = aws.String(delimiter)
	}
	for {
		out, err := s.client.ListObjectsV2(ctx, in, s.observe(nil))
		if err != nil {
			return fmt.Errorf("%s %s: %w", action, prefix, mapError(err))
		}
		if err := s.exactKeys(ctx, out); err != nil {
			return fmt.Errorf("%s %s: %w", action, prefix, err)
		}
		if err := fn(out); err != nil {
			return err
		}
		next := aws.ToString(out.NextContinuationToken)
		if !aws.ToBool(out.IsTruncated) || next == "" {
			return nil
		}
		in.ContinuationToken = aws.String(next)
	}
}

// objects converts a response page, dropping the root's own marker object.
func (s *Store) objects(out *s3.ListObjectsV2Output) []objstore.Object {
	objs := make([]objstore.Object, 0, len(out.Contents))
	for _, o := range out.Contents {
		key := s.rel(aws.ToString(o.Key))
		if key == "" {
			continue
		}
		objs = append(objs, objstore.Object{
			Key:          key,
			Size:         aws.ToInt64(o.Size),
			ETag:         unquote(aws.ToString(o.ETag)),
			LastModified: aws.ToTime(o.LastModified),
		})
	}
	return objs
}

// rel strips the root prefix from a bucket key.
func (s *Store) rel(key string) string { return strings.TrimPrefix(key, s.root) }

// abs turns a store key into a bucket key after checking its grammar.
func (s *Store) abs(key string) (*string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, err
	}
	return aws.String(s.root + key), nil
}

// Get reads a whole object of at most limit bytes.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	k, err := s.abs(key)
	if err == nil {
		err = objstore.CheckLimit(key, limit)
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.loc.Bucket), Key: k}, s.observe(nil))
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, mapError(err))
	}
	defer out.Body.Close()
	body, err := objstore.ReadLimited(out.Body, key, aws.ToInt64(out.ContentLength), limit)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read %s: %w", key, err)
	}
	return body, objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         unquote(aws.ToString(out.ETag)),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// Head reads an object's metadata.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	k, err := s.abs(key)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.loc.Bucket), Key: k}, s.observe(nil))
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, mapError(err))
	}
	return objstore.Object{
		Key:          key,
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         unquote(aws.ToString(out.ETag)),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// unquote strips the quotes S3 puts around ETags.
func unquote(etag string) string { return strings.Trim(etag, `"`) }

// quote restores them for If-Match.
func quote(etag string) string { return `"` + etag + `"` }

// PruneEmpty removes nothing: S3 has no directories; "folder" objects are
// objects and are walked and deleted as such.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	return objstore.PruneFlat(ctx, prefix)
}
