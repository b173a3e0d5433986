package reaper_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// slowDownProxy forwards to the real S3 server but answers the first PUT
// of a key ending in suffix with 503 SlowDown, counting those PUTs.
type slowDownProxy struct {
	suffix string
	next   http.Handler
	mu     sync.Mutex
	puts   int
}

func (p *slowDownProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, p.suffix) {
		p.mu.Lock()
		p.puts++
		first := p.puts == 1
		p.mu.Unlock()
		if first {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
	}
	p.next.ServeHTTP(w, r)
}

func (p *slowDownProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.puts
}

// TestOpenRetriesAndCounts: an embedded caller gets the CLI's store stack.
// A throttled marker write is retried (before, reaper.Open returned the
// bare backend and Drop failed with the 503), the store's metrics land in
// the caller's registry, shared by every Namespace opened on it, and its
// calls are traced with the caller's provider.
func TestOpenRetriesAndCounts(t *testing.T) {
	srv := objstoretest.S3(t)
	ctx := t.Context()
	setup, err := all.Open(ctx, srv.URI("db"), srv.Options())
	require.NoError(t, err)
	_, err = setup.Put(ctx, "orders.lance/_versions/1.manifest", []byte("lance"))
	require.NoError(t, err)

	target, err := url.Parse(srv.Endpoint)
	require.NoError(t, err)
	proxy := &slowDownProxy{suffix: "/db/orders.deleted", next: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	opts := srv.Options()
	opts["aws_endpoint"] = front.URL

	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	open := func() *reaper.Namespace {
		ns, err := reaper.Open(ctx, srv.URI("db"), reaper.Options{
			StorageOptions: opts,
			Registerer:     reg,
			TracerProvider: tp,
			Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		return ns
	}
	ns := open()
	_, err = ns.Drop(ctx, "orders", time.Hour)
	require.NoError(t, err, "drop through a throttled marker write")
	require.Equal(t, 2, proxy.count(), "one throttled PUT, one retry")

	st, err := open().Status(ctx, "orders") // a second Namespace on the same registry
	require.NoError(t, err)
	require.Equal(t, reaper.StateSoftDeleted, st[0].State)

	require.Equal(t, 1.0, counterValue(t, reg, "reaper_s3_http_requests_total", map[string]string{"operation": "PutObject", "code": "503"}))
	require.Equal(t, 1.0, counterValue(t, reg, "reaper_s3_http_requests_total", map[string]string{"operation": "PutObject", "code": "200"}))
	require.Equal(t, 1.0, counterValue(t, reg, "reaper_objstore_requests_total", map[string]string{"op": "put_if_absent", "code": "ok"}),
		"the store call is counted once, however often it was retried")
	var ops []string
	for _, s := range spans.Ended() {
		ops = append(ops, s.Name())
	}
	require.Contains(t, ops, "objstore.put_if_absent", "store calls are traced with the caller's provider")
}

// counterValue reads one counter series from reg; 0 when it is absent.
func counterValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
