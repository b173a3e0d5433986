package azure_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// recorder is a RoundTripper that counts requests by method and can strip
// the Date header from answers.
type recorder struct {
	mu      sync.Mutex
	methods []string
	noDate  atomic.Bool
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.methods = append(r.methods, req.Method)
	r.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if resp != nil && r.noDate.Load() {
		resp.Header.Del("Date")
		resp.Header.Del("Last-Modified")
	}
	return resp, err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.methods)
}

func openRecorded(t *testing.T, opts map[string]string) (objstoretest.AzureServer, *azure.Store, *recorder) {
	t.Helper()
	srv := objstoretest.Azure(t)
	if opts == nil {
		opts = srv.Options()
	}
	loc, err := all.ParseLocation(srv.URI("db"))
	require.NoError(t, err)
	rec := &recorder{}
	st, err := azure.Open(t.Context(), loc, opts, objstore.OpenEnv{Transport: rec})
	require.NoError(t, err)
	return srv, st, rec
}

// Every request goes through the transport the caller lends (request
// counters, fault injection), one per call.
func TestTransportCarriesEveryRequest(t *testing.T) {
	_, st, rec := openRecorded(t, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		call func() error
		want int
	}{
		{"put", func() error { _, err := st.Put(ctx, "a", []byte("1")); return err }, 1},
		{"put if absent", func() error { _, err := st.PutIfAbsent(ctx, "b", []byte("1")); return err }, 1},
		{"get", func() error { _, _, err := st.Get(ctx, "a", 1<<20); return err }, 1},
		{"head", func() error { _, err := st.Head(ctx, "a"); return err }, 1},
		{"list", func() error { return st.List(ctx, "", func(objstore.Page) error { return nil }) }, 1},
		{"walk", func() error { return st.Walk(ctx, "", func([]objstore.Object) error { return nil }) }, 1},
		{"delete", func() error { return st.Delete(ctx, "a") }, 1},
		{"delete batch", func() error { return st.DeleteBatch(ctx, []string{"b", "missing"}) }, 1},
		{"now (fresh Date)", func() error { _, err := st.Now(ctx); return err }, 0},
	} {
		before := rec.count()
		require.NoError(t, tc.call(), tc.name)
		require.Equal(t, tc.want, rec.count()-before, "%s: requests through the transport: got/want", tc.name)
	}
}

// A full batch goes in ceil(n/BatchSize) Blob Batch requests, and the fence
// is asked before each: once it refuses, the keys not yet sent fail with
// ErrFenced and nothing more is sent.
func TestDeleteBatchFencedPerRequest(t *testing.T) {
	_, st, rec := openRecorded(t, nil)
	st.BatchSize = 10
	ctx := t.Context()
	keys := make([]string, 35)
	for i := range keys {
		keys[i] = fmt.Sprintf("t.lance/data/%02d", i)
	}
	objstoretest.PutAll(t, st, keys, func(k string) []byte { return []byte(k) })

	before := rec.count()
	f := &countingFence{allow: 2}
	err := st.DeleteBatch(objstore.WithFence(ctx, f), keys)
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 15, "keys after the second request: got/want")
	require.Equal(t, keys[20], be.Failed[0].Key)
	for _, kf := range be.Failed {
		require.ErrorIs(t, kf.Err, objstore.ErrFenced)
	}
	require.Equal(t, 2, rec.count()-before, "requests sent: got/want")
	require.Equal(t, 3, f.asked, "fence asked before each request, and once more")

	left := 0
	require.NoError(t, st.Walk(ctx, "", func(objs []objstore.Object) error { left += len(objs); return nil }))
	require.Equal(t, 15, left, "objects left: got/want")
}

type countingFence struct {
	allow, asked int
}

func (f *countingFence) Allow() (time.Duration, error) {
	f.asked++
	if f.asked > f.allow {
		return 0, errors.New("lease lost")
	}
	return time.Minute, nil
}

// The store's clock comes from the service's Date headers: close to this
// host's (Azurite runs here), and without them Now fails closed.
func TestNowFromDateFailsClosed(t *testing.T) {
	_, st, rec := openRecorded(t, nil)
	now, err := st.Now(t.Context())
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), now, 3*time.Second)

	_, st, rec = openRecorded(t, nil)
	rec.noDate.Store(true)
	_, err = st.Now(t.Context())
	require.ErrorContains(t, err, "sends no Date header")
}

// A SAS rides in the request URL; neither it nor an account key may
// appear in an error.
func TestSecretsNotInErrors(t *testing.T) {
	srv := objstoretest.Azure(t)
	const sig = "c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw"
	for name, opts := range map[string]map[string]string{
		"sas": {"azure_storage_account_name": srv.Account, "azure_storage_endpoint": srv.AccountURL(), "allow_http": "true",
			"azure_storage_sas_key": "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2000-01-01T00:00:00Z&sig=" + sig},
		"key": {"azure_storage_account_name": srv.Account, "azure_storage_endpoint": srv.AccountURL(), "allow_http": "true",
			"azure_storage_account_key": sig + "=="},
	} {
		t.Run(name, func(t *testing.T) {
			loc, err := all.ParseLocation(srv.URI("db"))
			require.NoError(t, err)
			st, err := azure.Open(t.Context(), loc, opts, objstore.OpenEnv{})
			require.NoError(t, err)
			_, err = st.Put(t.Context(), "k", []byte("v"))
			require.Error(t, err, "a bad credential must be refused")
			require.NotContains(t, err.Error(), sig)
			require.False(t, strings.Contains(err.Error(), "\n"), "one-line error: %q", err)
		})
	}
}

func TestErrorClasses(t *testing.T) {
	respErr := func(status int, code string) error {
		h := http.Header{}
		if code != "" {
			h.Set("x-ms-error-code", code)
		}
		req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1/acct/c/k", nil)
		return runtime.NewResponseError(&http.Response{StatusCode: status, Header: h, Request: req, Body: http.NoBody})
	}
	for _, tc := range []struct {
		name                string
		err                 error
		transient, throttle bool
	}{
		{"503 ServerBusy", respErr(503, "ServerBusy"), true, true},
		{"500 InternalError", respErr(500, "InternalError"), true, true},
		{"500 OperationTimedOut", respErr(500, "OperationTimedOut"), true, true},
		{"429", respErr(429, ""), true, true},
		{"502", respErr(502, ""), true, false},
		{"408", respErr(408, ""), true, false},
		{"403 AuthenticationFailed", respErr(403, "AuthenticationFailed"), false, false},
		{"404 ContainerNotFound", respErr(404, "ContainerNotFound"), false, false},
		{"request deadline", objstore.ErrRequestDeadline, true, false},
		{"fenced", objstore.ErrFenced, false, false},
		{"batch of throttles", &objstore.BatchError{Failed: []objstore.KeyError{{Key: "a", Err: respErr(503, "ServerBusy")}}}, true, true},
	} {
		require.Equal(t, tc.transient, azure.IsTransient(tc.err), "%s transient: got/want", tc.name)
		require.Equal(t, tc.throttle, azure.IsThrottle(tc.err), "%s throttle: got/want", tc.name)
	}
}

// folderMeta marks the answers for one blob as an ADLS Gen2 directory
// (x-ms-meta-hdi_isfolder: true), as a hierarchical-namespace account
// answers for a directory; Azurite does not emulate those accounts.
type folderMeta struct{ name string }

func (f folderMeta) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if resp != nil && strings.HasSuffix(req.URL.Path, "/"+f.name) {
		resp.Header.Set("x-ms-meta-hdi_isfolder", "true")
	}
	return resp, err
}

// A directory blob is a folder, never an object: Get and Head answer not
// found and say folder, so a folder-form hold holds and a directory
// _reaper does not read as a PAUSE object.
func TestDirectoryBlobIsAFolder(t *testing.T) {
	srv := objstoretest.Azure(t)
	loc, err := all.ParseLocation(srv.URI("db"))
	require.NoError(t, err)
	plain, err := azure.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	require.NoError(t, err)
	_, err = plain.Put(t.Context(), "t.reaper-hold", nil)
	require.NoError(t, err)
	st, err := azure.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{Transport: folderMeta{name: "t.reaper-hold"}})
	require.NoError(t, err)
	_, _, err = st.Get(t.Context(), "t.reaper-hold", 1<<10)
	require.ErrorIs(t, err, objstore.ErrNotFound)
	require.ErrorIs(t, err, objstore.ErrIsFolder)
	_, err = st.Head(t.Context(), "t.reaper-hold")
	require.ErrorIs(t, err, objstore.ErrNotFound)
	require.ErrorIs(t, err, objstore.ErrIsFolder)
	_, err = plain.Head(t.Context(), "t.reaper-hold")
	require.NoError(t, err, "without the metadata it is an object")
}
