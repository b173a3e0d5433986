package interop

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// object is what the store itself says about one key: the checks below
// bypass both reaper and LanceDB.
type object struct {
	Size     int64
	Modified time.Time
}

// backend is a database root on one kind of storage, with direct access to
// the storage for setup and checks.
type backend interface {
	// uri is the root for reaper and LanceDB.
	uri() string
	// lanceOptions are the Lance storage options (nil for a local root).
	lanceOptions() map[string]string
	// cliArgs are reaper's --storage-option flags.
	cliArgs() []string
	// list returns every object whose key, relative to the root, starts with
	// prefix.
	list(t *testing.T, prefix string) map[string]object
	// rootEntries is a one-level listing of the root: object keys, and
	// "<dir>/" for every directory (local) or common prefix (S3).
	rootEntries(t *testing.T) []string
	put(t *testing.T, key string, body []byte)
	// get returns nil when the key does not exist.
	get(t *testing.T, key string) []byte
	// storeNow reads the store's clock, the one that stamps LastModified
	// and that reaper judges due-ness by: a lower bound of it, as reaper
	// reads it (local: the kernel's clock; S3: the Date header, whole
	// seconds, which versitygw refreshes once a second).
	storeNow(t *testing.T) time.Time
}

// localBackend is a root directory on the local disk.
type localBackend struct{ dir string }

func newLocal(t *testing.T) *localBackend {
	dir := filepath.Join(t.TempDir(), "lancedb")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &localBackend{dir: dir}
}

func (b *localBackend) uri() string                     { return b.dir }
func (b *localBackend) lanceOptions() map[string]string { return nil }
func (b *localBackend) cliArgs() []string               { return nil }

func (b *localBackend) list(t *testing.T, prefix string) map[string]object {
	t.Helper()
	out := map[string]object{}
	err := filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(b.dir, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[key] = object{Size: info.Size(), Modified: info.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", b.dir, err)
	}
	return out
}

func (b *localBackend) rootEntries(t *testing.T) []string {
	t.Helper()
	des, err := os.ReadDir(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		if d.IsDir() {
			out = append(out, d.Name()+"/")
		} else {
			out = append(out, d.Name())
		}
	}
	return out
}

func (b *localBackend) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, filepath.FromSlash(key)), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *localBackend) get(t *testing.T, key string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// storeNow is the kernel's clock, which stamps every file's ctime (reaper's
// LastModified is the later of mtime and ctime), in the milliseconds a
// marker carries.
func (b *localBackend) storeNow(*testing.T) time.Time {
	return time.Now().Truncate(time.Millisecond)
}

// s3Backend is a root under a prefix of a fresh versitygw bucket.
type s3Backend struct {
	srv    objstoretest.S3Server
	prefix string // "lancedb/"
}

func newS3(t *testing.T) *s3Backend {
	return &s3Backend{srv: objstoretest.S3(t), prefix: "lancedb/"}
}

func (b *s3Backend) uri() string                     { return b.srv.URI(b.prefix) }
func (b *s3Backend) lanceOptions() map[string]string { return b.srv.Options() }

func (b *s3Backend) cliArgs() []string {
	var out []string
	for k, v := range b.srv.Options() {
		out = append(out, "--storage-option", k+"="+v)
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (b *s3Backend) list(t *testing.T, prefix string) map[string]object {
	t.Helper()
	out := map[string]object{}
	pages := s3.NewListObjectsV2Paginator(b.srv.Client, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.srv.Bucket),
		Prefix: aws.String(b.prefix + prefix),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("list s3 %s%s: %v", b.prefix, prefix, err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), b.prefix)] = object{Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}
		}
	}
	return out
}

func (b *s3Backend) rootEntries(t *testing.T) []string {
	t.Helper()
	var out []string
	pages := s3.NewListObjectsV2Paginator(b.srv.Client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(b.srv.Bucket),
		Prefix:    aws.String(b.prefix),
		Delimiter: aws.String("/"),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("list s3 root %s: %v", b.prefix, err)
		}
		for _, p := range page.CommonPrefixes {
			out = append(out, strings.TrimPrefix(aws.ToString(p.Prefix), b.prefix))
		}
		for _, o := range page.Contents {
			out = append(out, strings.TrimPrefix(aws.ToString(o.Key), b.prefix))
		}
	}
	sort.Strings(out)
	return out
}

func (b *s3Backend) put(t *testing.T, key string, body []byte) {
	t.Helper()
	_, err := b.srv.Client.PutObject(ctxT(t), &s3.PutObjectInput{
		Bucket: aws.String(b.srv.Bucket),
		Key:    aws.String(b.prefix + key),
		Body:   bytes.NewReader(body),
	})
	if err != nil {
		t.Fatalf("put s3 %s: %v", key, err)
	}
}

func (b *s3Backend) get(t *testing.T, key string) []byte {
	t.Helper()
	out, err := b.srv.Client.GetObject(ctxT(t), &s3.GetObjectInput{
		Bucket: aws.String(b.srv.Bucket),
		Key:    aws.String(b.prefix + key),
	})
	if err != nil {
		var nsk interface{ ErrorCode() string }
		if errors.As(err, &nsk) && nsk.ErrorCode() == "NoSuchKey" {
			return nil
		}
		t.Fatalf("get s3 %s: %v", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read s3 %s: %v", key, err)
	}
	return body
}

// storeNow is the Date header of a HeadBucket answer: the server's clock
// truncated to the second when it wrote the header, a lower bound of it.
// Every later answer carries a Date at least as late.
func (b *s3Backend) storeNow(t *testing.T) time.Time {
	t.Helper()
	out, err := b.srv.Client.HeadBucket(ctxT(t), &s3.HeadBucketInput{Bucket: aws.String(b.srv.Bucket)})
	if err != nil {
		t.Fatalf("head s3 bucket %s: %v", b.srv.Bucket, err)
	}
	resp, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response)
	if !ok || resp == nil {
		t.Fatalf("head s3 bucket %s: no raw HTTP response", b.srv.Bucket)
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		t.Fatalf("head s3 bucket %s: Date header %q: %v", b.srv.Bucket, resp.Header.Get("Date"), err)
	}
	return date
}
