package interop

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// azureBackend is a root under a prefix of a fresh Azurite container.
// LanceDB reaches it with the same object_store options reaper takes: the
// account, its key and the account's endpoint (allow_http).
type azureBackend struct {
	srv    objstoretest.AzureServer
	cc     *container.Client
	prefix string // "lancedb/"
}

func newAzure(t *testing.T) *azureBackend {
	srv := objstoretest.Azure(t)
	return &azureBackend{srv: srv, cc: srv.Client.ServiceClient().NewContainerClient(srv.Container), prefix: "lancedb/"}
}

func (b *azureBackend) uri() string                     { return b.srv.URI(b.prefix) }
func (b *azureBackend) lanceOptions() map[string]string { return b.srv.Options() }

func (b *azureBackend) cliArgs() []string {
	var out []string
	for k, v := range b.srv.Options() {
		out = append(out, "--storage-option", k+"="+v)
	}
	return out
}

func (b *azureBackend) list(t *testing.T, prefix string) map[string]object {
	t.Helper()
	out := map[string]object{}
	p := b.prefix + prefix
	pages := b.cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &p})
	for pages.More() {
		page, err := pages.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("list azure %s: %v", p, err)
		}
		for _, o := range page.Segment.BlobItems {
			out[strings.TrimPrefix(*o.Name, b.prefix)] = object{Size: *o.Properties.ContentLength, Modified: *o.Properties.LastModified}
		}
	}
	return out
}

func (b *azureBackend) rootEntries(t *testing.T) []string {
	t.Helper()
	var out []string
	pages := b.cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &b.prefix})
	for pages.More() {
		page, err := pages.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("list azure root %s: %v", b.prefix, err)
		}
		for _, p := range page.Segment.BlobPrefixes {
			out = append(out, strings.TrimPrefix(*p.Name, b.prefix))
		}
		for _, o := range page.Segment.BlobItems {
			out = append(out, strings.TrimPrefix(*o.Name, b.prefix))
		}
	}
	sort.Strings(out)
	return out
}

func (b *azureBackend) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := b.cc.NewBlockBlobClient(b.prefix+key).Upload(ctxT(t), streaming.NopCloser(bytes.NewReader(body)), nil); err != nil {
		t.Fatalf("put azure %s: %v", key, err)
	}
}

func (b *azureBackend) get(t *testing.T, key string) []byte {
	t.Helper()
	out, err := b.cc.NewBlobClient(b.prefix+key).DownloadStream(ctxT(t), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("get azure %s: %v", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read azure %s: %v", key, err)
	}
	return body
}

// storeNow is the Date header of a Get Container Properties answer: the
// service's clock in whole seconds, a lower bound of it.
func (b *azureBackend) storeNow(t *testing.T) time.Time {
	t.Helper()
	var raw *http.Response
	ctx := runtime.WithCaptureResponse(ctxT(t), &raw)
	if _, err := b.cc.GetProperties(ctx, nil); err != nil {
		t.Fatalf("get azure container properties: %v", err)
	}
	date, err := http.ParseTime(raw.Header.Get("Date"))
	if err != nil {
		t.Fatalf("azure container properties: Date header %q: %v", raw.Header.Get("Date"), err)
	}
	return date
}
