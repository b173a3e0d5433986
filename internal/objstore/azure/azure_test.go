package azure_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// openTestStore opens a store on a fresh Azurite container under prefix.
func openTestStore(t *testing.T, prefix string, pageSize int32) (objstoretest.AzureServer, *azure.Store) {
	t.Helper()
	srv := objstoretest.Azure(t)
	loc, err := all.ParseLocation(srv.URI(prefix))
	require.NoError(t, err, "parse %s", srv.URI(prefix))
	st, err := azure.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	require.NoError(t, err, "open %s", srv.URI(prefix))
	st.PageSize = pageSize
	return srv, st
}

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		_, st := openTestStore(t, "", 0)
		return st
	})
}

func TestConformanceUnderPrefix(t *testing.T) {
	const pageSize = 7 // small pages: every paging path is crossed cheaply
	neighbours := []string{"some/prefixed", "some/other/x", "top"}
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		srv, st := openTestStore(t, "some/prefix", pageSize)
		// Neighbours outside the root: the suite's exact listings fail if
		// they leak in, and its deletes must leave them alone.
		cc := srv.Client.ServiceClient().NewContainerClient(srv.Container)
		for _, k := range neighbours {
			_, err := cc.NewBlockBlobClient(k).Upload(t.Context(), streaming.NopCloser(bytes.NewReader([]byte(k))), nil)
			require.NoError(t, err, "put neighbour %s", k)
		}
		t.Cleanup(func() {
			for _, k := range neighbours {
				_, err := cc.NewBlobClient(k).GetProperties(context.Background(), nil)
				assert.NoError(t, err, "neighbour %s outside the root must survive", k)
			}
		})
		return st
	}, objstoretest.WithPageSize(pageSize))
}
