package gcs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// A batch is a request per key here, so it asks the between-keys check
// before each: once the check refuses (a drop seen mid-batch), nothing more
// is sent, and the keys not sent say so, wrapping the refusal. Before, the
// whole batch was sent.
func TestDeleteBatchStopsBetweenKeys(t *testing.T) {
	srv := objstoretest.GCS(t)
	loc, err := all.ParseLocation(srv.URI("db"))
	require.NoError(t, err)
	st, err := gcs.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	require.NoError(t, err)
	st.DeleteConcurrency = 1
	keys := []string{"a", "b", "c", "d"}
	for _, k := range keys {
		_, err := st.Put(t.Context(), k, []byte(k))
		require.NoError(t, err)
	}
	dropped := errors.New("the table was dropped (test)")
	asked := 0
	ctx := objstore.WithBetweenKeys(t.Context(), func(context.Context) error {
		asked++
		if asked > 2 {
			return dropped
		}
		return nil
	})
	err = st.DeleteBatch(ctx, keys)
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 2)
	for i, f := range be.Failed {
		require.Equal(t, keys[2+i], f.Key)
		require.ErrorIs(t, f.Err, dropped, f.Key)
		require.Contains(t, f.Err.Error(), "delete "+f.Key+": not sent", f.Key)
	}
	require.Equal(t, 3, asked, "not asked again once it refused")
	for i, k := range keys {
		_, err := st.Head(t.Context(), k)
		if i < 2 {
			require.ErrorIs(t, err, objstore.ErrNotFound, k)
		} else {
			require.NoError(t, err, "%s was never sent", k)
		}
	}
}
