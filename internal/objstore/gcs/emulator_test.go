package gcs_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// TestEmulatorDeletePrecondition pins where fake-gcs-server differs from
// GCS, so the conformance suite's conditional-delete clauses are known to
// pass for the right reason. The emulator ignores ifGenerationMatch on a
// DELETE (a delete with a wrong generation succeeds; GCS answers 412), but
// honours generation=N (404 once N is not live). DeleteIfMatch sends both,
// so on the emulator the generation is what refuses a stale delete, and on
// GCS the precondition is (TestWireDeleteIfMatch checks the request and the
// 412). If this test fails because the emulator started honouring the
// precondition, update docs/BACKENDS.md.
func TestEmulatorDeletePrecondition(t *testing.T) {
	srv, st := openTestStore(t, "", 0)
	ctx := t.Context()
	rawDelete := func(key string, query string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete,
			fmt.Sprintf("%s/storage/v1/b/%s/o/%s?%s", srv.Endpoint, srv.Bucket, url.PathEscape(key), query), nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	cur, err := st.Put(ctx, "ignored", []byte("v"))
	require.NoError(t, err)
	code := rawDelete("ignored", "ifGenerationMatch=1")
	require.Equal(t, 2, code/100, "the emulator ignores a wrong ifGenerationMatch on DELETE (GCS: 412); got %d", code)
	_, err = st.Head(ctx, "ignored")
	require.ErrorIs(t, err, objstore.ErrNotFound, "the emulator deleted generation %s despite the precondition", cur.ETag)

	stale, err := st.Put(ctx, "honoured", []byte("v1"))
	require.NoError(t, err)
	live, err := st.Put(ctx, "honoured", []byte("v2"))
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, rawDelete("honoured", "generation="+stale.ETag), "the emulator refuses a generation that is not live")
	err = st.DeleteIfMatch(ctx, "honoured", stale.ETag)
	require.ErrorIs(t, err, objstore.ErrPrecondition)
	got, err := st.Head(ctx, "honoured")
	require.NoError(t, err, "the live generation survives a stale conditional delete")
	require.Equal(t, live.ETag, got.ETag)
}
