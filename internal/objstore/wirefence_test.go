package objstore

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWireFenceRefusesALateWrite pins the fence's last check: a fenced
// request whose deadline passed between Fenced's check and the transport's
// write (its sender frozen there) never reaches the server, on a fresh
// connection or a reused one, over plain HTTP or TLS; one written in time
// is sent, and the connection it leaves behind carries unfenced requests
// as before.
func TestWireFenceRefusesALateWrite(t *testing.T) {
	for _, tls := range []bool{false, true} {
		for _, reuse := range []bool{false, true} {
			name := map[bool]string{false: "http", true: "tls"}[tls] + map[bool]string{false: "/fresh conn", true: "/idle conn"}[reuse]
			t.Run(name, func(t *testing.T) {
				var got atomic.Int64
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got.Add(1)
					_, _ = io.Copy(io.Discard, r.Body)
				})
				srv := httptest.NewUnstartedServer(h)
				tr := NewHTTPTransport()
				if tls {
					srv.StartTLS()
					tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
				} else {
					srv.Start()
				}
				t.Cleanup(srv.Close)
				t.Cleanup(tr.CloseIdleConnections)
				send := func(ctx context.Context, method string) error {
					req, err := http.NewRequestWithContext(ctx, method, srv.URL+"/k", nil)
					require.NoError(t, err)
					resp, err := tr.RoundTrip(req)
					if err != nil {
						return err
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					return resp.Body.Close()
				}
				if reuse {
					require.NoError(t, send(t.Context(), http.MethodGet))
					require.EqualValues(t, 1, got.Load())
				}
				before := got.Load()

				// Frozen past its deadline before the write: refused, nothing sent.
				ctx, refused, done := withWireDeadline(t.Context(), time.Now().Add(-time.Second))
				err := send(ctx, http.MethodDelete)
				done()
				require.Error(t, err)
				require.True(t, refused(), "the late write was not refused on the wire")
				require.Equal(t, before, got.Load(), "a request written past its deadline reached the server")

				// In time: sent; the connection then serves unfenced requests.
				ctx, refused, done = withWireDeadline(t.Context(), time.Now().Add(time.Hour))
				require.NoError(t, send(ctx, http.MethodDelete))
				done()
				require.False(t, refused())
				require.Equal(t, before+1, got.Load())
				require.NoError(t, send(t.Context(), http.MethodGet))
				require.Equal(t, before+2, got.Load())
			})
		}
	}
}

// TestHTTPTransportSpeaksHTTP1 pins what the wire check needs: one request
// per connection at a time, so never HTTP/2's shared connections.
func TestHTTPTransportSpeaksHTTP1(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr := NewHTTPTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1", string(body))
}

// stallReader stands for a sender frozen after "100 Continue": its first
// Read waits until the request's deadline has passed (the freeze modelled,
// not a synchronisation), then hands out the body.
type stallReader struct {
	until time.Time
	body  *strings.Reader
}

func (r *stallReader) Read(p []byte) (int, error) {
	if d := time.Until(r.until); d > 0 {
		time.Sleep(d + time.Millisecond) // the freeze itself
	}
	return r.body.Read(p)
}

// TestWireFenceCoversTheBodyAfterContinue: an upload that waits for "100
// Continue" (the S3 SDK's, past its size threshold) writes its body after
// the answer has started; a body whose deadline passed meanwhile is
// refused, and the server never gets it.
func TestWireFenceCoversTheBodyAfterContinue(t *testing.T) {
	type seen struct {
		headers bool
		body    []byte
		err     error
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body) // sends "100 Continue" first
		got <- seen{headers: true, body: body, err: err}
	}))
	t.Cleanup(srv.Close)
	tr := NewHTTPTransport()
	tr.ExpectContinueTimeout = time.Minute
	t.Cleanup(tr.CloseIdleConnections)

	by := time.Now().Add(time.Second)
	ctx, refused, done := withWireDeadline(t.Context(), by)
	defer done()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/k", &stallReader{until: by, body: strings.NewReader("late body")})
	require.NoError(t, err)
	req.ContentLength = int64(len("late body"))
	req.Header.Set("Expect", "100-continue")
	_, err = tr.RoundTrip(req)
	require.Error(t, err)
	require.True(t, refused(), "the body written past the deadline was not refused")
	s := <-got
	require.True(t, s.headers, "the headers went in time")
	require.Error(t, s.err, "the server got the whole body: %q", s.body)
}
