package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// azureBackend is a root under a prefix of a fresh container on the Azure
// test server (Azurite); the test skips when there is none.
func azureBackend(t *testing.T) backend {
	srv := objstoretest.Azure(t)
	const prefix = "lance/db/"
	var kvs []string
	for k, v := range srv.Options() {
		kvs = append(kvs, k+"="+v)
	}
	slices.Sort(kvs)
	ctx := context.Background()
	cc := srv.Client.ServiceClient().NewContainerClient(srv.Container)
	return backend{
		name:  "azure",
		clock: objstoretest.NewClock(),
		opts:  storeOptions{globalOptions: quiet(), Root: srv.URI(prefix), StorageOptions: kvs},
		put: func(t *testing.T, key string, body []byte, _ time.Time) {
			_, err := cc.NewBlockBlobClient(prefix+key).Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), nil)
			require.NoError(t, err)
		},
		get: func(t *testing.T, key string) ([]byte, bool) {
			out, err := cc.NewBlobClient(prefix+key).DownloadStream(ctx, nil)
			if bloberror.HasCode(err, bloberror.BlobNotFound) {
				return nil, false
			}
			require.NoError(t, err)
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			require.NoError(t, err)
			return b, true
		},
		keys: func(t *testing.T) []string {
			var keys []string
			p := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: new(prefix)})
			for p.More() {
				out, err := p.NextPage(ctx)
				require.NoError(t, err)
				for _, b := range out.Segment.BlobItems {
					keys = append(keys, strings.TrimPrefix(*b.Name, prefix))
				}
			}
			slices.Sort(keys)
			return keys
		},
		store: func(t *testing.T) objstore.Store {
			s, err := all.Open(ctx, srv.URI(prefix), srv.Options())
			require.NoError(t, err)
			return s
		},
	}
}
