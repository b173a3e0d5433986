package gcs_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/api/googleapi"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// Wire tests pin the exact requests the store sends and how it reads
// answers a real service gives but the emulator does not (412 on a delete,
// throttling, a missing Date), against an httptest server.

type wireReq struct {
	Method string
	Path   string
	Query  url.Values
}

type wire struct {
	mu   sync.Mutex
	reqs []wireReq
}

func (w *wire) requests() []wireReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireReq(nil), w.reqs...)
}

// newWireStore opens a store on bucket "bkt" under "root" whose service is
// handler.
func newWireStore(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) (*gcs.Store, *wire) {
	t.Helper()
	f := &wire{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, wireReq{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query()})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	loc, err := all.ParseLocation("gs://bkt/root")
	require.NoError(t, err)
	st, err := gcs.Open(t.Context(), loc, objstoretest.GCSServer{Endpoint: srv.URL}.Options(), objstore.OpenEnv{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, f
}

func objectJSON(name string, gen int64) string {
	return fmt.Sprintf(`{"kind":"storage#object","bucket":"bkt","name":%q,"generation":"%d","metageneration":"1","size":"1","updated":"2026-01-02T03:04:05.678Z"}`, name, gen)
}

func gcsError(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"reason":%q}]}}`, code, reason, reason)
}

// A conditional delete names the generation both as the precondition and
// as the version to delete; GCS's 412 reads as ErrPrecondition, with no
// further request.
func TestWireDeleteIfMatch(t *testing.T) {
	st, f := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
		gcsError(w, http.StatusPreconditionFailed, "conditionNotMet")
	})
	err := st.DeleteIfMatch(t.Context(), "t.reaper-lock", "42")
	require.ErrorIs(t, err, objstore.ErrPrecondition)
	reqs := f.requests()
	require.Len(t, reqs, 1, "one DELETE")
	require.Equal(t, http.MethodDelete, reqs[0].Method)
	require.Equal(t, "/storage/v1/b/bkt/o/root%2Ft.reaper-lock", reqs[0].Path)
	require.Equal(t, "42", reqs[0].Query.Get("ifGenerationMatch"), "the precondition")
	require.Equal(t, "42", reqs[0].Query.Get("generation"), "the generation itself")
}

// A 404 on a conditional delete is told apart by a read: another
// generation there is a lost precondition, nothing there is not found.
func TestWireDeleteIfMatchNotLive(t *testing.T) {
	for name, head := range map[string]int{"other generation": 200, "missing": 404} {
		t.Run(name, func(t *testing.T) {
			st, _ := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && head == 200 {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, objectJSON("root/k", 43))
					return
				}
				gcsError(w, http.StatusNotFound, "notFound")
			})
			err := st.DeleteIfMatch(t.Context(), "k", "42")
			if head == 200 {
				require.ErrorIs(t, err, objstore.ErrPrecondition)
				return
			}
			require.ErrorIs(t, err, objstore.ErrNotFound)
		})
	}
}

// Create-if-absent is ifGenerationMatch=0 on a single-request upload; a
// compare-and-swap names the generation.
func TestWireConditionalUploads(t *testing.T) {
	bodies := []string{"x", "y"}
	var n int
	st, f := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
		// The client checks the answer's CRC32C against what it sent.
		sum := crc32.Checksum([]byte(bodies[n]), crc32.MakeTable(crc32.Castagnoli))
		n++
		crc := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
		obj := strings.TrimSuffix(objectJSON("root/k", 7), "}") + fmt.Sprintf(`,"crc32c":%q}`, crc)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, obj)
	})
	obj, err := st.PutIfAbsent(t.Context(), "k", []byte("x"))
	require.NoError(t, err)
	require.Equal(t, "7", obj.ETag, "the generation is the ETag")
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC), obj.LastModified.UTC(), "updated, by the service's clock")
	_, err = st.PutIfMatch(t.Context(), "k", []byte("y"), "7")
	require.NoError(t, err)
	reqs := f.requests()
	require.Len(t, reqs, 2)
	for i, want := range []string{"0", "7"} {
		require.Equal(t, http.MethodPost, reqs[i].Method)
		require.Equal(t, "multipart", reqs[i].Query.Get("uploadType"), "one request, no resumable session")
		require.Equal(t, want, reqs[i].Query.Get("ifGenerationMatch"))
	}
}

// The store's clock is the Date of the service's answers, extrapolated;
// with no Date at all, Now fails closed.
func TestWireClock(t *testing.T) {
	past := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	st, _ := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", past.Format(http.TimeFormat))
		gcsError(w, http.StatusNotFound, "notFound")
	})
	now, err := st.Now(t.Context())
	require.NoError(t, err, "a 404 is dated like any answer")
	require.WithinDuration(t, past, now, 2*time.Second, "the service's clock, not the host's")

	undated, _ := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http adds one unless told not to
		gcsError(w, http.StatusNotFound, "notFound")
	})
	_, err = undated.Now(t.Context())
	require.ErrorContains(t, err, "sends no Date header")
}

func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		code                int
		transient, throttle bool
	}{
		{429, true, true}, {503, true, true}, {500, true, true},
		{502, true, false}, {504, true, false}, {408, true, false},
		{400, false, false}, {401, false, false}, {403, false, false},
	} {
		err := fmt.Errorf("op: %w", &googleapi.Error{Code: tc.code})
		require.Equal(t, tc.transient, gcs.IsTransient(err), "transient %d", tc.code)
		require.Equal(t, tc.throttle, gcs.IsThrottle(err), "throttle %d", tc.code)
	}
	for _, err := range []error{context.Canceled, objstore.ErrFenced, objstore.ErrPrecondition, objstore.ErrNotFound} {
		require.False(t, gcs.IsTransient(err), "%v", err)
	}
	require.True(t, gcs.IsTransient(objstore.ErrRequestDeadline))
	be := &objstore.BatchError{Failed: []objstore.KeyError{{Key: "a", Err: &googleapi.Error{Code: 503}}}}
	require.True(t, gcs.IsTransient(be))
	require.True(t, gcs.IsThrottle(be))
	be.Failed = append(be.Failed, objstore.KeyError{Key: "b", Err: &googleapi.Error{Code: 403}})
	require.False(t, gcs.IsTransient(be), "one permanent key makes the batch permanent")
	require.False(t, errors.Is(be, objstore.ErrNotFound))
}

// A read is one media download: the generation and the update time come
// from its headers, and a body that does not match the CRC32C the service
// sends is an error, not data.
func TestWireGet(t *testing.T) {
	sum := crc32.Checksum([]byte("hello"), crc32.MakeTable(crc32.Castagnoli))
	good := "crc32c=" + base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, hash, gen, wantErr string
	}{
		{name: "checked", hash: good + ",md5=XUFAKrxLKna5cZ2REBfFkg==", gen: "5"},
		{name: "no hash sent", gen: "5"},
		{name: "corrupt", hash: "crc32c=AAAAAA==", gen: "5", wantErr: "does not match the stored CRC32C"},
		{name: "no generation", hash: good, wantErr: "no generation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, f := newWireStore(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.hash != "" {
					w.Header().Set("X-Goog-Hash", tc.hash)
				}
				if tc.gen != "" {
					w.Header().Set("X-Goog-Generation", tc.gen)
				}
				w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
				fmt.Fprint(w, "hello")
			})
			body, obj, err := st.Get(t.Context(), "k", 1<<20)
			reqs := f.requests()
			require.Len(t, reqs, 1)
			require.Equal(t, "/storage/v1/b/bkt/o/root%2Fk", reqs[0].Path)
			require.Equal(t, "media", reqs[0].Query.Get("alt"))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, body)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "hello", string(body))
			require.Equal(t, "5", obj.ETag)
			require.Equal(t, modified, obj.LastModified.UTC())
		})
	}
}

// countFence allows n mutating requests, then refuses every later one.
type countFence struct {
	mu sync.Mutex
	n  int
}

func (f *countFence) Allow() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return 0, errors.New("lease lost (test)")
	}
	f.n--
	return 0, nil
}

// Keys a batch never sent after the fence stopped it say "not sent" and
// name themselves: before, they carried the stopping key's error, naming
// another key.
func TestDeleteBatchNotSentAfterAStop(t *testing.T) {
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
	ctx := objstore.WithFence(t.Context(), &countFence{n: 1})
	err = st.DeleteBatch(ctx, keys)
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 3)
	require.Equal(t, "b", be.Failed[0].Key)
	require.NotContains(t, be.Failed[0].Err.Error(), "not sent", "b was refused by the fence itself")
	for _, f := range be.Failed[1:] {
		require.ErrorIs(t, f.Err, objstore.ErrFenced, f.Key)
		require.Contains(t, f.Err.Error(), "delete "+f.Key+": not sent", f.Key)
	}
}
