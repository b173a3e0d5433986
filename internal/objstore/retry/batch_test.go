package retry

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// partial fails some keys of its first batch with per-key errors, deleting
// the rest.
type partial struct {
	*flaky
	failed map[string]error
}

func (p partial) DeleteBatch(ctx context.Context, keys []string) error {
	p.mu.Lock()
	p.batch = append(p.batch, keys)
	first := len(p.batch) == 1
	p.mu.Unlock()
	if !first {
		return p.Store.DeleteBatch(ctx, keys)
	}
	var ok []string
	be := &objstore.BatchError{}
	for _, k := range keys {
		if err, bad := p.failed[k]; bad {
			be.Failed = append(be.Failed, objstore.KeyError{Key: k, Err: err})
		} else {
			ok = append(ok, k)
		}
	}
	if err := p.Store.DeleteBatch(ctx, ok); err != nil {
		return err
	}
	return be
}

func TestBatchRetriesOnlyFailedKeys(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	m := seeded(t, 0, keys...)
	p := partial{newFlaky(m, 0), map[string]error{"b": errTransient, "d": fmt.Errorf("slow: %w", errTransient)}}
	s := Wrap(p, testOptions(newFakeTime()))
	require.NoError(t, s.DeleteBatch(t.Context(), keys))
	require.Equal(t, [][]string{keys, {"b", "d"}}, p.batch, "batches sent: got/want")
	for _, k := range keys {
		_, err := m.Head(t.Context(), k)
		require.ErrorIs(t, err, objstore.ErrNotFound, "%s deleted", k)
	}
}

func TestBatchWithPermanentKeyNotRetried(t *testing.T) {
	keys := []string{"a", "b", "c"}
	m := seeded(t, 0, keys...)
	p := partial{newFlaky(m, 0), map[string]error{"b": errTransient, "c": errPermanent}}
	s := Wrap(p, testOptions(newFakeTime()))
	err := s.DeleteBatch(t.Context(), keys)
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 2)
	require.Len(t, p.batch, 1, "no retry with a permanent key failure")
}

func TestBatchWholeRequestRetried(t *testing.T) {
	keys := []string{"a", "b"}
	m := seeded(t, 0, keys...)
	f := newFlaky(m, 2)
	s := Wrap(f, testOptions(newFakeTime()))
	require.NoError(t, s.DeleteBatch(t.Context(), keys))
	require.Equal(t, [][]string{keys, keys, keys}, f.batch)
}

func TestBatchTooManyBeforeAnyRequest(t *testing.T) {
	f := newFlaky(memstore.New(), 0)
	s := Wrap(f, testOptions(newFakeTime()))
	keys := make([]string, objstore.MaxBatchDelete+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	require.Error(t, s.DeleteBatch(t.Context(), keys))
	require.Empty(t, f.batch)
}
