package objstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

func TestSyncBatch(t *testing.T) {
	b := objstore.NewSyncBatch()
	require.Nil(t, objstore.SyncBatchFrom(context.Background()))
	require.Same(t, b, objstore.SyncBatchFrom(objstore.WithSyncBatch(context.Background(), b)))

	var ran []string
	boom := errors.New("boom")
	require.True(t, b.Defer("a", func() error { ran = append(ran, "a"); return nil }))
	require.False(t, b.Defer("a", func() error { ran = append(ran, "a again"); return nil }), "one pending fn per key")
	require.True(t, b.Defer("b", func() error { ran = append(ran, "b"); return boom }))
	require.Equal(t, 2, b.Pending())

	err := b.Flush()
	require.ErrorIs(t, err, boom, "a change that could not be made durable is an error")
	require.Equal(t, []string{"a", "b"}, ran, "every fn runs once, in order, even after a failure")
	require.Zero(t, b.Pending())
	require.NoError(t, b.Flush(), "flushed work does not run twice")
	require.True(t, b.Defer("a", func() error { return nil }), "a key is free again after a flush")
}
