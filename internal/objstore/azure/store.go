// Package azure is the objstore.Store backend for Azure Blob Storage, rooted
// at a container and blob-name prefix. Conditional writes and deletes map to
// If-None-Match: * and If-Match: <etag> (ETag preconditions, not blob
// leases: see docs/BACKENDS.md), so lease locks work across processes; the
// SDK's own retries are off, because a retried conditional write may have
// landed and only the caller's retry wrapper can tell (see Open).
package azure

import (
	"context"
	"fmt"

	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultPageSize is the MaxResults of a listing request: Azure's (and
// S3's) maximum of 5000 is larger, but 1000 keeps pages like S3's.
const DefaultPageSize = objstore.DefaultPageSize

// Store is an objstore.Store over one container and blob-name prefix.
type Store struct {
	client *container.Client
	loc    objstore.Location
	root   string // loc.Prefix plus "/", or "" for the container root

	// PageSize is the MaxResults of each listing request (DefaultPageSize
	// when zero); tests lower it to exercise paging.
	PageSize int32
	// BatchSize is how many deletes one Blob Batch request carries
	// (MaxBlobBatch when zero or larger). Tests against Azurite lower it:
	// the emulator spends time linear in its blob count on each delete, so
	// a full batch can outlast the lease's per-request limit there.
	BatchSize int
	// ClockMaxAge is how old the latest Date may be before Now sends a
	// request for a fresh one (DefaultClockMaxAge when zero).
	ClockMaxAge time.Duration

	clock *objstore.DateClock // the store's clock, fed by every response (clock.go)
}

var _ objstore.Store = (*Store)(nil)

// URI is the root URI; it never carries credentials.
func (s *Store) URI() string { return s.loc.String() }

func (s *Store) pageSize() *int32 {
	n := s.PageSize
	if n <= 0 {
		n = DefaultPageSize
	}
	return &n
}

// List lists one level under prefix, one fn call per non-empty response
// page (an empty listing calls fn never).
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	p := s.root + prefix
	pager := s.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &p, MaxResults: s.pageSize()})
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, mapError(err))
		}
		var page objstore.Page
		if seg := resp.Segment; seg != nil {
			page.Objects = s.objects(seg.BlobItems)
			for _, bp := range seg.BlobPrefixes {
				if bp.Name == nil {
					continue
				}
				if rel := s.rel(*bp.Name); rel != "" {
					page.Prefixes = append(page.Prefixes, rel)
				}
			}
		}
		if len(page.Objects)+len(page.Prefixes) == 0 {
			continue
		}
		if err := fn(page); err != nil {
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
	p := s.root + prefix
	pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &p, MaxResults: s.pageSize()})
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("walk %s: %w", prefix, mapError(err))
		}
		if resp.Segment == nil {
			continue
		}
		objs := s.objects(resp.Segment.BlobItems)
		if len(objs) == 0 {
			continue
		}
		if err := fn(objs); err != nil {
			return err
		}
	}
	return nil
}

// objects converts a listing page, dropping the root's own marker blob.
func (s *Store) objects(items []*container.BlobItem) []objstore.Object {
	objs := make([]objstore.Object, 0, len(items))
	for _, it := range items {
		if it.Name == nil {
			continue
		}
		key := s.rel(*it.Name)
		if key == "" {
			continue
		}
		o := objstore.Object{Key: key}
		if pr := it.Properties; pr != nil {
			o.Size = deref(pr.ContentLength)
			o.ETag = etagOf(pr.ETag)
			o.LastModified = deref(pr.LastModified)
		}
		objs = append(objs, o)
	}
	return objs
}

// rel strips the root prefix from a blob name.
func (s *Store) rel(name string) string { return strings.TrimPrefix(name, s.root) }

// name turns a store key into a blob name after checking its grammar.
func (s *Store) name(key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", err
	}
	return s.root + key, nil
}

// Get reads a whole object of at most limit bytes.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	n, err := s.name(key)
	if err == nil {
		err = objstore.CheckLimit(key, limit)
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	resp, err := s.client.NewBlobClient(n).DownloadStream(ctx, nil)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, mapError(err))
	}
	defer resp.Body.Close()
	if isFolder(resp.Metadata) {
		return nil, objstore.Object{}, folderError("get", key)
	}
	size := int64(-1)
	if resp.ContentLength != nil {
		size = *resp.ContentLength
	}
	body, err := objstore.ReadLimited(resp.Body, key, size, limit)
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read %s: %w", key, err)
	}
	return body, objstore.Object{
		Key:          key,
		Size:         int64(len(body)),
		ETag:         etagOf(resp.ETag),
		LastModified: deref(resp.LastModified),
	}, nil
}

// Head reads an object's metadata.
func (s *Store) Head(ctx context.Context, key string) (objstore.Object, error) {
	n, err := s.name(key)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, err)
	}
	resp, err := s.client.NewBlobClient(n).GetProperties(ctx, nil)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("head %s: %w", key, mapError(err))
	}
	if isFolder(resp.Metadata) {
		return objstore.Object{}, folderError("head", key)
	}
	return objstore.Object{
		Key:          key,
		Size:         deref(resp.ContentLength),
		ETag:         etagOf(resp.ETag),
		LastModified: deref(resp.LastModified),
	}, nil
}

// etagOf strips the quotes Azure puts around ETags.
func etagOf(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return strings.Trim(string(*e), `"`)
}

// quoted restores them for If-Match.
func quoted(etag string) *azcore.ETag {
	e := azcore.ETag(`"` + etag + `"`)
	return &e
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// isFolder reports a hierarchical-namespace (ADLS Gen2) directory: a blob
// carrying the metadata hdi_isfolder=true. It is a folder, not an object:
// read as an object, a directory named like a switch would read as set
// (or a folder-form hold as its empty body).
func isFolder(md map[string]*string) bool {
	for k, v := range md {
		if strings.EqualFold(k, "hdi_isfolder") && v != nil && strings.EqualFold(*v, "true") {
			return true
		}
	}
	return false
}

// folderError is Get's and Head's answer for a directory blob.
func folderError(action, key string) error {
	return fmt.Errorf("%s %s: %w (%w)", action, key, objstore.ErrNotFound, objstore.ErrIsFolder)
}

// PruneEmpty removes nothing: Blob Storage (without a hierarchical
// namespace) has no directories.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	return objstore.PruneFlat(ctx, prefix)
}
