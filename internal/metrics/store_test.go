package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

const testPageSize = 10

func newMemory() *memstore.Store {
	mem := memstore.New()
	mem.PageSize = testPageSize
	return mem
}

func TestWrapStoreConformance(t *testing.T) {
	m := New(prometheus.NewRegistry(), Options{})
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		return WrapStore(newMemory(), m)
	}, objstoretest.WithPageSize(testPageSize))
	problems, err := testutil.CollectAndLint(m.storeRequests)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func requests(m *Metrics, op, code string) float64 {
	return testutil.ToFloat64(m.storeRequests.WithLabelValues(op, code))
}

func TestWrapStoreCodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := New(prometheus.NewRegistry(), Options{})
	mem := newMemory()
	s := WrapStore(mem, m)
	require.Same(t, mem, s.(interface{ Unwrap() objstore.Store }).Unwrap())
	require.Equal(t, mem.URI(), s.URI())

	obj, err := s.Put(ctx, "a/b", []byte("x"))
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "a/b", 1<<20)
	require.NoError(t, err)
	_, err = s.Head(ctx, "missing")
	require.ErrorIs(t, err, objstore.ErrNotFound)
	_, err = s.PutIfAbsent(ctx, "a/b", []byte("y"))
	require.ErrorIs(t, err, objstore.ErrPrecondition)
	_, err = s.PutIfMatch(ctx, "a/b", []byte("y"), obj.ETag)
	require.NoError(t, err)
	require.ErrorIs(t, s.DeleteIfMatch(ctx, "a/b", "stale"), objstore.ErrPrecondition)
	require.NoError(t, s.Delete(ctx, "a/b"))
	_, err = s.Put(ctx, "/bad", nil)
	require.ErrorIs(t, err, objstore.ErrInvalidKey)
	require.NoError(t, s.DeleteBatch(ctx, []string{"k1", "k2", "k3"}))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = s.Get(cancelled, "a/b", 1<<20)
	require.Error(t, err)

	want := map[[2]string]float64{
		{OpPut, CodeOK}:                     1,
		{OpPut, CodeError}:                  1,
		{OpGet, CodeOK}:                     1,
		{OpGet, CodeCanceled}:               1,
		{OpHead, CodeNotFound}:              1,
		{OpPutIfAbsent, CodePrecondition}:   1,
		{OpPutIfMatch, CodeOK}:              1,
		{OpDeleteIfMatch, CodePrecondition}: 1,
		{OpDelete, CodeOK}:                  1,
		{OpDeleteBatch, CodeOK}:             1,
	}
	for _, op := range storeOps {
		for _, code := range storeCodes {
			got := requests(m, op, code)
			require.Equal(t, want[[2]string{op, code}], got, "requests{op=%s,code=%s}: got/want", op, code)
		}
	}
	require.Equal(t, 10, testutil.CollectAndCount(m.storeDuration), "one histogram per op")
}

func TestWrapStoreListingPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := New(prometheus.NewRegistry(), Options{})
	mem := newMemory()
	for i := range 25 {
		_, err := mem.Put(ctx, fmt.Sprintf("t/%02d", i), []byte("x"))
		require.NoError(t, err)
	}
	s := WrapStore(mem, m)

	pages := 0
	require.NoError(t, s.List(ctx, "t/", func(objstore.Page) error { pages++; return nil }))
	require.Equal(t, 3, pages)
	require.Equal(t, 3.0, requests(m, OpList, CodeOK), "one request per page")

	require.NoError(t, s.Walk(ctx, "", func([]objstore.Object) error { return nil }))
	require.Equal(t, 3.0, requests(m, OpWalk, CodeOK))

	require.NoError(t, s.List(ctx, "none/", func(objstore.Page) error { return nil }))
	require.Equal(t, 4.0, requests(m, OpList, CodeOK), "an empty listing is one request")

	stop := errors.New("stop")
	err := s.Walk(ctx, "t/", func([]objstore.Object) error { return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 4.0, requests(m, OpWalk, CodeOK), "the page delivered counts")
	require.Equal(t, 0.0, requests(m, OpWalk, CodeError), "the callback's error is no store request")

	boom := errors.New("connection reset")
	failing := WrapStore(failAfterPage{Store: mem, err: boom}, m)
	err = failing.List(ctx, "t/", func(objstore.Page) error { return nil })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 5.0, requests(m, OpList, CodeOK))
	require.Equal(t, 1.0, requests(m, OpList, CodeError))
}

// failAfterPage delivers the first listing page, then fails.
type failAfterPage struct {
	objstore.Store
	err error
}

func (f failAfterPage) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	first := true
	err := f.Store.List(ctx, prefix, func(p objstore.Page) error {
		if !first {
			return f.err
		}
		first = false
		return fn(p)
	})
	return err
}

func TestResultCode(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	done, cancel := context.WithCancel(ctx)
	cancel()
	batch := &objstore.BatchError{Failed: []objstore.KeyError{{Key: "k", Err: objstore.ErrNotFound}}}
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{ctx, nil, CodeOK},
		{ctx, fmt.Errorf("head x: %w", objstore.ErrNotFound), CodeNotFound},
		{ctx, fmt.Errorf("put x: %w", objstore.ErrPrecondition), CodePrecondition},
		{ctx, context.Canceled, CodeCanceled},
		{done, errors.New("dial: operation was canceled"), CodeCanceled},
		{ctx, context.DeadlineExceeded, CodeError},
		{ctx, batch, CodeError},
		{ctx, errors.New("boom"), CodeError},
	} {
		require.Equal(t, tc.want, ResultCode(tc.ctx, tc.err), "ResultCode(%v)", tc.err)
	}
}

func TestWrapStoreNilMetrics(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	require.Same(t, objstore.Store(mem), WrapStore(mem, nil))
}
