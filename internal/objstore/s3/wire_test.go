package s3_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// wireReq is what the fake server saw of one request.
type wireReq struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// wire is an httptest S3 endpoint that records requests and answers with
// respond; it checks what the store puts on the wire.
type wire struct {
	mu      sync.Mutex
	reqs    []wireReq
	respond func(w http.ResponseWriter, r wireReq)
}

func (f *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := wireReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	f.respond(w, req)
}

func (f *wire) requests() []wireReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wireReq(nil), f.reqs...)
}

// countingTransport counts round trips; it also proves the OpenEnv transport is used.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// newWireStore opens a store rooted at s3://bkt/root against a fake server.
func newWireStore(t *testing.T, respond func(w http.ResponseWriter, r wireReq)) (*s3.Store, *wire, *countingTransport) {
	t.Helper()
	f := &wire{respond: respond}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ct := &countingTransport{}
	loc, err := all.ParseLocation("s3://bkt/root")
	require.NoError(t, err)
	st, err := s3.Open(t.Context(), loc, map[string]string{
		"aws_endpoint":          srv.URL,
		"allow_http":            "true",
		"aws_access_key_id":     "AKIDWIRE",
		"aws_secret_access_key": "wire-secret",
		"aws_region":            "us-east-1",
	}, objstore.OpenEnv{Transport: ct})
	require.NoError(t, err)
	return st, f, ct
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>test</Message><RequestId>r</RequestId></Error>`, code)
}

func TestWirePutIfAbsentHeaders(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		w.Header().Set("ETag", `"abc123"`)
	})
	obj, err := st.PutIfAbsent(t.Context(), "lease", []byte("body"))
	require.NoError(t, err)
	require.Equal(t, "abc123", obj.ETag, "ETag with quotes stripped: got/want")
	require.Equal(t, "lease", obj.Key)
	require.Equal(t, int64(4), obj.Size)
	require.False(t, obj.LastModified.IsZero(), "LastModified set without a HEAD")

	reqs := f.requests()
	require.Len(t, reqs, 1, "requests: a put needs no HEAD")
	require.Equal(t, http.MethodPut, reqs[0].Method)
	require.Equal(t, "/bkt/root/lease", reqs[0].Path, "path-style key under the root")
	require.Equal(t, "*", reqs[0].Header.Get("If-None-Match"))
	require.Empty(t, reqs[0].Header.Get("If-Match"))
	require.Equal(t, "body", reqs[0].Body)
}

func TestWirePutIfMatchHeaders(t *testing.T) {
	status := map[string]int{"ok": 200, "stale": 412, "missing": 404}
	code := map[int]string{412: "PreconditionFailed", 404: "NoSuchKey"}
	for name, st := range status {
		t.Run(name, func(t *testing.T) {
			store, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				if st != 200 {
					s3Error(w, st, code[st])
					return
				}
				w.Header().Set("ETag", `"new"`)
			})
			obj, err := store.PutIfMatch(t.Context(), "lease", []byte("v2"), "old")
			reqs := f.requests()
			require.Len(t, reqs, 1)
			require.Equal(t, `"old"`, reqs[0].Header.Get("If-Match"), "If-Match re-quoted")
			require.Empty(t, reqs[0].Header.Get("If-None-Match"))
			switch st {
			case 200:
				require.NoError(t, err)
				require.Equal(t, "new", obj.ETag)
			case 412:
				require.ErrorIs(t, err, objstore.ErrPrecondition, "got %v", err)
			case 404:
				require.ErrorIs(t, err, objstore.ErrNotFound, "got %v", err)
			}
		})
	}
}

func TestWirePutIfAbsentConflict(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{{412, "PreconditionFailed"}, {409, "ConditionalRequestConflict"}} {
		st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) { s3Error(w, tc.status, tc.code) })
		_, err := st.PutIfAbsent(t.Context(), "lease", []byte("x"))
		require.ErrorIs(t, err, objstore.ErrPrecondition, "%d %s: got %v", tc.status, tc.code, err)
		require.False(t, s3.IsTransient(err), "a lost race is not transient")
		require.Contains(t, err.Error(), "put if absent lease: ")
	}
}

// DeleteIfMatch is one conditional DELETE (no HEAD first): 412 is a lost
// race, 404 (AWS) a missing key; a server answering 204 for a missing key
// reads as success.
func TestWireDeleteIfMatchHeaders(t *testing.T) {
	for name, tc := range map[string]struct {
		delete  int
		want    error
		deletes int
	}{
		"match":   {delete: 204, deletes: 1},
		"raced":   {delete: 412, want: objstore.ErrPrecondition, deletes: 1},
		"missing": {delete: 404, want: objstore.ErrNotFound, deletes: 1},
	} {
		t.Run(name, func(t *testing.T) {
			st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				switch r.Method {
				case http.MethodDelete:
					if tc.delete == 204 {
						w.WriteHeader(204)
						return
					}
					s3Error(w, tc.delete, map[int]string{412: "PreconditionFailed", 404: "NoSuchKey"}[tc.delete])
				}
			})
			err := st.DeleteIfMatch(t.Context(), "lease", "e1")
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want, "got %v", err)
			}
			var deletes []wireReq
			for _, r := range f.requests() {
				if r.Method == http.MethodDelete {
					deletes = append(deletes, r)
				}
			}
			require.Len(t, deletes, tc.deletes, "DELETE requests")
			require.Len(t, f.requests(), tc.deletes, "no other request (no HEAD)")
			for _, r := range deletes {
				require.Equal(t, `"e1"`, r.Header.Get("If-Match"))
				require.Equal(t, "/bkt/root/lease", r.Path)
			}
		})
	}
}

// A 200 DeleteObjects answer can list per-key errors. A transient one
// (SlowDown) comes back for the retry wrapper to resend; a permanent one
// (InvalidArgument) is retried alone with DeleteObject, and reported with
// the error of that delete when it fails again; AccessDenied is reported
// without a delete alone (permission, not the key's form); a missing key
// is deleted.
func TestWireDeleteBatchPerKeyErrors(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		if r.Method == http.MethodDelete {
			s3Error(w, 400, "InvalidArgument")
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Error><Key>root/a</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>
<Error><Key>root/b</Key><Code>InvalidArgument</Code><Message>Invalid</Message></Error>
<Error><Key>root/c</Key><Code>SlowDown</Code><Message>Reduce your request rate</Message></Error>
<Error><Key>root/d</Key><Code>NoSuchKey</Code><Message>gone</Message></Error>
</DeleteResult>`)
	})
	err := st.DeleteBatch(t.Context(), []string{"a", "b", "c", "d", "e"})
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be, "a 200 with <Error> entries is an error")
	require.Len(t, be.Failed, 3, "failed keys (a missing key counts as deleted)")
	require.Equal(t, "a", be.Failed[0].Key, "keys relative to the root, in batch order")
	require.Contains(t, be.Failed[0].Err.Error(), "AccessDenied")
	require.Equal(t, "b", be.Failed[1].Key)
	require.Contains(t, be.Failed[1].Err.Error(), "delete b: ", "b's own delete failed")
	require.Contains(t, be.Failed[1].Err.Error(), "InvalidArgument")
	require.Equal(t, "c", be.Failed[2].Key)
	require.True(t, s3.IsThrottle(be.Failed[2].Err), "c keeps its SlowDown")
	require.False(t, s3.IsTransient(err), "a permanent key failure makes the batch permanent")

	reqs := f.requests()
	require.Len(t, reqs, 2, "the batch, then b alone")
	require.Equal(t, http.MethodPost, reqs[0].Method)
	require.Contains(t, reqs[0].Query, "delete")
	require.Contains(t, reqs[0].Body, "<Quiet>true</Quiet>")
	for _, k := range []string{"root/a", "root/b", "root/c", "root/d", "root/e"} {
		require.Contains(t, reqs[0].Body, "<Key>"+k+"</Key>")
	}
	require.Equal(t, http.MethodDelete, reqs[1].Method)
	require.Equal(t, "/bkt/root/b", reqs[1].Path, "only the permanently failed key goes alone")
}

// A key the batch failed permanently that its own delete removes is not
// reported: the batch could not delete it, the store could.
func TestWireDeleteBatchAloneRecovers(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Error><Key>root/b</Key><Code>InvalidArgument</Code><Message>x</Message></Error></DeleteResult>`)
	})
	require.NoError(t, st.DeleteBatch(t.Context(), []string{"a", "b"}))
	require.Len(t, f.requests(), 2, "the batch, then b alone")
}

func TestWireDeleteBatchNoRequest(t *testing.T) {
	st, _, ct := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		t.Errorf("unexpected request %s %s", r.Method, r.Path)
	})
	keys := make([]string, objstore.MaxBatchDelete+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	require.Error(t, st.DeleteBatch(t.Context(), keys), "1001 keys")
	require.NoError(t, st.DeleteBatch(t.Context(), nil), "no keys")
	require.ErrorIs(t, st.DeleteBatch(t.Context(), []string{"../bad", "a//b"}), objstore.ErrInvalidKey)
	require.Zero(t, ct.n, "round trips: a batch of refused keys sends nothing")
}

func TestWireListRequest(t *testing.T) {
	pages := []string{
		`<IsTruncated>true</IsTruncated><NextContinuationToken>tok1</NextContinuationToken>
<Contents><Key>root/d/a</Key><Size>3</Size><ETag>"ea"</ETag><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>
<CommonPrefixes><Prefix>root/d/b/</Prefix></CommonPrefixes>`,
		`<IsTruncated>false</IsTruncated>
<Contents><Key>root/d/c</Key><Size>1</Size><ETag>"ec"</ETag><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>`,
	}
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		w.Header().Set("Content-Type", "application/xml")
		i := 0
		if strings.Contains(r.Query, "continuation-token=tok1") {
			i = 1
		}
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name>%s</ListBucketResult>`, pages[i])
	})
	var got []objstore.Page
	require.NoError(t, st.List(t.Context(), "d/", func(p objstore.Page) error {
		got = append(got, p)
		return nil
	}))
	require.Len(t, got, 2, "one callback per response page")
	require.Equal(t, "d/a", got[0].Objects[0].Key)
	require.Equal(t, "ea", got[0].Objects[0].ETag)
	require.Equal(t, []string{"d/b/"}, got[0].Prefixes)
	require.Equal(t, "d/c", got[1].Objects[0].Key)

	reqs := f.requests()
	require.Len(t, reqs, 2)
	for _, want := range []string{"list-type=2", "delimiter=%2F", "max-keys=1000", "prefix=root%2Fd%2F"} {
		require.Contains(t, reqs[0].Query, want)
	}
}

func TestWireErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		status    int
		code      string
		notFound  bool
		transient bool
		throttle  bool
	}{
		{404, "NoSuchKey", true, false, false},
		{404, "NoSuchBucket", false, false, false},
		{403, "AccessDenied", false, false, false},
		{503, "SlowDown", false, true, true},
		{500, "InternalError", false, true, true},
		{429, "TooManyRequests", false, true, true},
		{400, "RequestTimeout", false, true, false},
		{502, "BadGateway", false, true, false},
	} {
		st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) { s3Error(w, tc.status, tc.code) })
		_, _, err := st.Get(t.Context(), "k", 1<<20)
		require.Error(t, err)
		require.Equal(t, tc.notFound, errors.Is(err, objstore.ErrNotFound), "%d %s not found: got %v", tc.status, tc.code, err)
		require.Equal(t, tc.transient, s3.IsTransient(err), "%d %s transient", tc.status, tc.code)
		require.Equal(t, tc.throttle, s3.IsThrottle(err), "%d %s throttle", tc.status, tc.code)
		require.True(t, strings.HasPrefix(err.Error(), "get k: "), "wrapped: %v", err)
		require.NotContains(t, err.Error(), "wire-secret")
	}
}

func TestIsTransientNetwork(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens any more: connection refused
	loc, _ := all.ParseLocation("s3://bkt")
	st, err := s3.Open(t.Context(), loc, map[string]string{
		"aws_endpoint": srv.URL, "allow_http": "true",
		"aws_access_key_id": "AKID", "aws_secret_access_key": "secret",
	}, objstore.OpenEnv{})
	require.NoError(t, err)
	_, err = st.Head(t.Context(), "k")
	require.Error(t, err)
	require.True(t, s3.IsTransient(err), "connection refused: %v", err)
	require.False(t, s3.IsThrottle(err), "a refused connection is retried without slowing the pass")
	require.False(t, s3.IsTransient(nil))
}

func TestWireDeleteMissing(t *testing.T) {
	for _, tc := range []struct {
		status  int
		code    string
		wantErr bool
	}{{204, "", false}, {404, "NoSuchKey", false}, {404, "NoSuchBucket", true}} {
		st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
			if tc.status == 204 {
				w.WriteHeader(204)
				return
			}
			s3Error(w, tc.status, tc.code)
		})
		err := st.Delete(t.Context(), "gone")
		if tc.wantErr {
			require.Error(t, err, "%d %s", tc.status, tc.code)
			require.NotErrorIs(t, err, objstore.ErrNotFound, "a missing bucket is not a missing key")
		} else {
			require.NoError(t, err, "%d %s: delete of a missing key succeeds", tc.status, tc.code)
		}
		reqs := f.requests()
		require.Len(t, reqs, 1)
		require.Empty(t, reqs[0].Header.Get("If-Match"), "plain delete is unconditional")
	}
}
