package azure_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// An endpoint nothing listens on is a misconfiguration in one line naming
// the endpoint and the option that sets it, not a raw client chain.
func TestUnreachableEndpointIsMisconfigured(t *testing.T) {
	srv := objstoretest.AzureServer{Endpoint: "http://" + objstoretest.ClosedAddr(t), Account: objstoretest.AzuriteAccount, Key: objstoretest.AzuriteKey, Container: "c"}
	loc, err := all.ParseLocation("az://c/db")
	require.NoError(t, err)
	st, err := azure.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	if err == nil {
		_, err = st.Head(context.Background(), "k")
	}
	require.ErrorIs(t, err, objstore.ErrMisconfigured)
	require.ErrorContains(t, err, "cannot reach the endpoint "+srv.Endpoint+": connection refused; check the storage option azure_storage_endpoint")
	require.True(t, azure.IsTransient(err), "a refused connection may be a restart: retried, briefly (retry.Options.MisconfiguredMaxElapsed)")
}
