package objstoretest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

func TestMain(m *testing.M) { Main(m) }

// Every backend's root starts empty, and a second handle on it sees what
// the first wrote, as another process would.
func TestBackendsOpenFreshSharedRoots(t *testing.T) {
	var names []string
	ForEachBackend(t, func(t *testing.T, b Backend) {
		names = append(names, b.Name)
		r := b.NewRoot(t)
		require.Equal(t, b.Name, r.Backend)
		require.NotEmpty(t, r.URI)
		if b.Scheme != "" {
			loc, err := all.ParseLocation(r.URI)
			require.NoError(t, err)
			require.Equal(t, b.Scheme, loc.Scheme, "the root's URI is of the backend's scheme")
		}
		s := r.Open(t)
		require.Empty(t, storeKeys(t, s), "a fresh root is empty")
		_, err := s.Put(t.Context(), "t.lance/_versions/1.manifest", []byte("m"))
		require.NoError(t, err)
		body, _, err := r.Open(t).Get(t.Context(), "t.lance/_versions/1.manifest", 1<<20)
		require.NoError(t, err)
		require.Equal(t, "m", string(body))
		require.Empty(t, storeKeys(t, b.NewRoot(t).Open(t)), "each root is a root of its own")
		switch b.Name {
		case Local.Name:
			require.FileExists(t, r.LocalPath("t.lance/_versions/1.manifest"))
		case S3Store.Name:
			require.Equal(t, "lancedb/prod/t.lance/x", r.S3Key("t.lance/x"))
			require.Equal(t, "s3://"+r.S3.Bucket+"/lancedb/prod", r.URI)
		case GCSStore.Name:
			require.Equal(t, "gs://"+r.GCS.Bucket+"/lancedb/prod", r.URI)
		case AzureStore.Name:
			require.Equal(t, "az://"+r.Azure.Container+"/lancedb/prod", r.URI)
		case S3DDBStore.Name:
			require.Equal(t, "s3+ddb://"+r.S3.Bucket+"/lancedb/prod?ddbTableName="+r.DDB.Table, r.URI)
			require.Equal(t, "s3+ddb://"+r.S3.Bucket+"/lancedb/prod/tenants/*/?ddbTableName="+r.DDB.Table, r.Sub("tenants/*/"))
		}
	})
	var want []string
	for _, b := range Backends() {
		want = append(want, b.Name)
	}
	require.Equal(t, want, names, "every backend, in order")
	require.Equal(t, "memory", names[0], "memory first: contract bugs show before I/O noise")
	require.Subset(t, names, []string{"local", "s3", "gcs", "azure"})
}

func storeKeys(t *testing.T, s objstore.Store) []string {
	objs, _ := walkAll(t, s, "")
	return keysOf(objs)
}

// The Azurite the tests start keeps idle connections for AzuriteKeepAlive
// seconds, as its flag asks (Node announces its keep-alive timeout in every
// answer). Azurite's own azurite-blob ignores the flag and closes them
// after 5 s, which failed a PUT now and then on a connection closing under
// it; scripts/azurite/blob.js is what makes the flag work.
func TestAzuriteKeepsIdleConnections(t *testing.T) {
	srv := Azure(t)
	res, err := http.Get(srv.AccountURL() + "?comp=list")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, fmt.Sprintf("timeout=%d", AzuriteKeepAlive), res.Header.Get("Keep-Alive"),
		"run scripts/install-azurite.sh: .tools/bin/azurite-blob must be scripts/azurite/blob.js")
}
