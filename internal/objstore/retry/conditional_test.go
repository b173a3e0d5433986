package retry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// landing returns a wrapper whose first conditional call lands on the
// memory store but reports a transient failure.
func landing(t *testing.T) (*memstore.Store, *flaky, objstore.Store) {
	t.Helper()
	m := memstore.New()
	f := newFlaky(m, 1)
	f.land = true
	return m, f, Wrap(f, testOptions(newFakeTime()))
}

func TestPutIfAbsentLanded(t *testing.T) {
	m, f, s := landing(t)
	obj, err := s.PutIfAbsent(t.Context(), "k", []byte("ours"))
	require.NoError(t, err, "our write landed on the first attempt")
	require.Equal(t, 2, f.count("put if absent"), "attempts: got/want")
	_, stored, err := m.Get(t.Context(), "k", 1<<20)
	require.NoError(t, err)
	require.Equal(t, stored, obj, "returned object: got/want the stored one")
}

func TestPutIfMatchLanded(t *testing.T) {
	m, _, s := landing(t)
	old, err := m.Put(t.Context(), "k", []byte("v1"))
	require.NoError(t, err)
	obj, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), old.ETag)
	require.NoError(t, err, "our write landed on the first attempt")
	body, stored, err := m.Get(t.Context(), "k", 1<<20)
	require.NoError(t, err)
	require.Equal(t, "v2", string(body))
	require.Equal(t, stored, obj, "returned object: got/want the stored one")
}

func TestDeleteIfMatchLanded(t *testing.T) {
	m, f, s := landing(t)
	old, err := m.Put(t.Context(), "k", []byte("v1"))
	require.NoError(t, err)
	require.NoError(t, s.DeleteIfMatch(t.Context(), "k", old.ETag), "our delete landed on the first attempt")
	require.Equal(t, 2, f.count("delete if match"))
}

// rival makes another writer win while our first attempt fails transiently
// without landing.
type rival struct {
	*flaky
	body string
}

func (r rival) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if r.count("put if absent") == 0 {
		_, _ = r.Store.Put(ctx, key, []byte(r.body))
	}
	return r.flaky.PutIfAbsent(ctx, key, body)
}

func (r rival) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if r.count("put if match") == 0 {
		_, _ = r.Store.Put(ctx, key, []byte(r.body))
	}
	return r.flaky.PutIfMatch(ctx, key, body, etag)
}

func TestConditionalPutLostToRival(t *testing.T) {
	m := memstore.New()
	f := newFlaky(m, 1)
	s := Wrap(rival{f, "theirs"}, testOptions(newFakeTime()))
	_, err := s.PutIfAbsent(t.Context(), "a", []byte("ours"))
	require.ErrorIs(t, err, objstore.ErrPrecondition, "another writer won")

	old, err := m.Put(t.Context(), "b", []byte("v1"))
	require.NoError(t, err)
	_, err = s.PutIfMatch(t.Context(), "b", []byte("ours"), old.ETag)
	require.ErrorIs(t, err, objstore.ErrPrecondition, "another writer won")
	require.Equal(t, 3, f.count("get"), "one re-read per conflict (the first re-read retried once)")
	body, _, err := m.Get(t.Context(), "b", 1<<20)
	require.NoError(t, err)
	require.Equal(t, "theirs", string(body))
}

func TestFirstAttemptConflictNotReread(t *testing.T) {
	m := memstore.New()
	_, err := m.Put(t.Context(), "k", []byte("ours"))
	require.NoError(t, err)
	f := newFlaky(m, 0)
	s := Wrap(f, testOptions(newFakeTime()))
	_, err = s.PutIfAbsent(t.Context(), "k", []byte("ours"))
	require.ErrorIs(t, err, objstore.ErrPrecondition, "no retry, so the conflict is real even with equal bytes")
	require.Zero(t, f.count("get"), "no re-read")
	require.ErrorIs(t, s.DeleteIfMatch(t.Context(), "missing", "etag"), objstore.ErrNotFound)
}

// failingReread: the conflict re-read fails, so the outcome is unknown.
type failingReread struct{ *flaky }

func (f failingReread) Get(context.Context, string, int64) ([]byte, objstore.Object, error) {
	return nil, objstore.Object{}, errPermanent
}

func TestConflictRereadFails(t *testing.T) {
	m := memstore.New()
	f := newFlaky(m, 1)
	f.land = true
	s := Wrap(failingReread{f}, testOptions(newFakeTime()))
	_, err := s.PutIfAbsent(t.Context(), "k", []byte("ours"))
	require.ErrorIs(t, err, errPermanent)
	require.NotErrorIs(t, err, objstore.ErrPrecondition, "an unknown outcome is not a lost race")
	require.ErrorContains(t, err, "outcome unknown")
}
