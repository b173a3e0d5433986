package gcs_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// The transport the registry lends (OpenEnv.Transport) carries every
// request, and each call is exactly the requests it should be: one, or
// one per key of a batch; no hidden retries or extra reads.
func TestOpenEnvTransportCarriesEveryRequest(t *testing.T) {
	srv := objstoretest.GCS(t)
	loc, err := all.ParseLocation(srv.URI("db"))
	require.NoError(t, err)
	rt := &countingTransport{}
	st, err := gcs.Backend().Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{Transport: rt})
	require.NoError(t, err)
	ctx := t.Context()
	var obj objstore.Object
	for _, tc := range []struct {
		name string
		want int64
		call func() error
	}{
		{"put if absent", 1, func() (err error) { obj, err = st.PutIfAbsent(ctx, "k", []byte("v")); return err }},
		{"put if match", 1, func() (err error) { obj, err = st.PutIfMatch(ctx, "k", []byte("w"), obj.ETag); return err }},
		{"get", 1, func() error { _, _, err := st.Get(ctx, "k", 1<<20); return err }},
		{"head", 1, func() error { _, err := st.Head(ctx, "k"); return err }},
		{"list", 1, func() error { return st.List(ctx, "", func(objstore.Page) error { return nil }) }},
		{"delete if match", 1, func() error { return st.DeleteIfMatch(ctx, "k", obj.ETag) }},
		{"delete missing", 1, func() error { return st.Delete(ctx, "k") }},
		{"delete batch", 3, func() error { return st.DeleteBatch(ctx, []string{"a", "b", "c"}) }},
	} {
		before := rt.n.Load()
		require.NoError(t, tc.call(), tc.name)
		require.Equal(t, tc.want, rt.n.Load()-before, "%s: requests through the lent transport", tc.name)
	}
}
