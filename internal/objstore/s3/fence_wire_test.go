package s3_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// mutations are the store's mutating calls, each as one closure.
func mutations(st *s3.Store) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"put":             func(ctx context.Context) error { _, err := st.Put(ctx, "k", []byte("x")); return err },
		"put if absent":   func(ctx context.Context) error { _, err := st.PutIfAbsent(ctx, "k", []byte("x")); return err },
		"put if match":    func(ctx context.Context) error { _, err := st.PutIfMatch(ctx, "k", []byte("x"), "e"); return err },
		"delete":          func(ctx context.Context) error { return st.Delete(ctx, "k") },
		"delete if match": func(ctx context.Context) error { return st.DeleteIfMatch(ctx, "k", "e") },
		"delete batch":    func(ctx context.Context) error { return st.DeleteBatch(ctx, []string{"k", "l"}) },
		"delete batch of keys XML cannot carry": func(ctx context.Context) error {
			return st.DeleteBatch(ctx, []string{"k\x01", "l\xff"})
		},
		"prune empty": func(ctx context.Context) error { return st.PruneEmpty(ctx, "t/") },
	}
}

// A refusing fence sends nothing at all, for every mutating call.
func TestWireFenceRefusesWithoutRequest(t *testing.T) {
	st, f, ct := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		t.Errorf("request sent under a refusing fence: %s %s", r.Method, r.Path)
	})
	for name, call := range mutations(st) {
		fence := &objstoretest.Fence{Allowed: 0}
		err := call(objstore.WithFence(t.Context(), fence))
		require.ErrorIs(t, err, objstore.ErrFenced, "%s: got %v", name, err)
		require.ErrorIs(t, err, objstoretest.ErrRefused, "%s: the fence's error in the chain", name)
		require.False(t, s3.IsTransient(err), "%s: fenced is final", name)
		require.Positive(t, fence.Calls(), "%s asks the fence", name)
	}
	require.Empty(t, f.requests(), "requests under a refusing fence")
	require.Zero(t, ct.n, "round trips under a refusing fence")
}

// The fence is asked before each request of a batch: a batch whose keys
// need their own deletes stops sending when the fence starts refusing.
func TestWireFenceAskedPerRequest(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(`<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	keys := []string{"a", "b\x01", "c\x1f"}

	fence := &objstoretest.Fence{Allowed: -1}
	require.NoError(t, st.DeleteBatch(objstore.WithFence(t.Context(), fence), keys))
	require.Equal(t, int64(3), fence.Calls(), "one question per request: the batch and two keys alone")
	require.Len(t, f.requests(), 3)

	fence = &objstoretest.Fence{Allowed: 2}
	err := st.DeleteBatch(objstore.WithFence(t.Context(), fence), keys)
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1, "the key whose delete the fence refused")
	require.Equal(t, "c\x1f", be.Failed[0].Key)
	require.ErrorIs(t, be.Failed[0].Err, objstore.ErrFenced)
	require.ErrorIs(t, err, objstore.ErrFenced, "the batch error carries the fence's refusal")
	require.Len(t, f.requests(), 5, "the batch and b alone were sent, c was not")
}

// blockingServer answers nothing until the test ends: arrived receives
// every request as it comes in.
func blockingServer(t *testing.T) (*s3.Store, <-chan wireReq) {
	t.Helper()
	release := make(chan struct{})
	arrived := make(chan wireReq, 16)
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		arrived <- r
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the server closes
	return st, arrived
}

// A request slower than the fence's limit is abandoned with
// ErrRequestDeadline (transient) while the caller's context is alive.
func TestWireFenceDeadline(t *testing.T) {
	st, _ := blockingServer(t)
	for name, call := range mutations(st) {
		if name == "prune empty" || name == "delete batch of keys XML cannot carry" {
			continue // sends nothing / covered by delete
		}
		fence := &objstoretest.Fence{Allowed: -1, Limit: 50 * time.Millisecond}
		err := call(objstore.WithFence(t.Context(), fence))
		require.ErrorIs(t, err, objstore.ErrRequestDeadline, "%s: got %v", name, err)
		require.NoError(t, t.Context().Err(), "the caller's context is alive")
		require.True(t, s3.IsTransient(err), "%s: a retry may ask the fence again", name)
		require.False(t, s3.IsThrottle(err), "%s: a fence deadline says nothing about the request rate", name)
		require.True(t, strings.HasPrefix(err.Error(), name+" "), "%s: the error names its action: %v", name, err)
	}
}

// A request ended by the caller's cancellation is a plain context error,
// never ErrRequestDeadline: the caller gave up, so nothing is retried.
func TestWireFenceCallerCancelled(t *testing.T) {
	st, arrived := blockingServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	fence := &objstoretest.Fence{Allowed: -1, Limit: time.Hour}
	done := make(chan error, 1)
	go func() {
		_, err := st.Put(objstore.WithFence(ctx, fence), "k", []byte("x"))
		done <- err
	}()
	<-arrived
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled, "got %v", err)
	require.False(t, errors.Is(err, objstore.ErrRequestDeadline), "the caller cancelled, not the fence: %v", err)
	require.False(t, s3.IsTransient(err))
}
