package gcs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// An endpoint nothing listens on is a misconfiguration in one line naming
// the endpoint and where it is set, not a raw client chain.
func TestUnreachableEndpointIsMisconfigured(t *testing.T) {
	srv := objstoretest.GCSServer{Endpoint: "http://" + objstoretest.ClosedAddr(t), Bucket: "b"}
	loc, err := all.ParseLocation(srv.URI("db"))
	require.NoError(t, err)
	st, err := gcs.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	if err == nil {
		t.Cleanup(func() { _ = st.Close() })
		_, err = st.Head(context.Background(), "k")
	}
	require.ErrorIs(t, err, objstore.ErrMisconfigured)
	require.ErrorContains(t, err, "cannot reach the endpoint "+srv.Endpoint+": connection refused; check the network path to storage.googleapis.com, or gcs_base_url")
	require.True(t, gcs.IsTransient(err), "a refused connection may be a restart: retried, briefly (retry.Options.MisconfiguredMaxElapsed)")
}
