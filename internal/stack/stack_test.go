package stack_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
	s3op "github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/stack"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

var errFlaky = errors.New("flaky")

// flaky fails the first n Puts with err, then passes them on.
type flaky struct {
	objstore.Store
	mu    sync.Mutex
	n     int
	err   error
	calls int
}

func (f *flaky) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.n
	f.mu.Unlock()
	if fail {
		return objstore.Object{}, f.err
	}
	return f.Store.Put(ctx, key, body)
}

// memRegistry registers a memory backend under the s3 scheme that declares
// errFlaky transient, so the retry layer's classifier can be traced back
// to the descriptor.
func memRegistry(t *testing.T, transient func(error) bool) *all.Registry {
	r := all.NewRegistry()
	require.NoError(t, r.Register(objstore.Backend{
		Scheme: "s3",
		Forms:  []objstore.URIForm{objstore.BucketForm("s3")},
		Open: func(context.Context, objstore.Location, map[string]string, objstore.OpenEnv) (objstore.Store, error) {
			return memstore.New(), nil
		},
		IsTransient: transient,
	}))
	return r
}

func isFlaky(err error) bool { return errors.Is(err, errFlaky) }

// TestLayers pins the order: the test wrapper sits on the backend, retries
// on it (classifying with the backend's descriptor), metrics and tracing
// outermost so a call is counted once however often it was retried.
func TestLayers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		transient  func(error) bool
		wantErr    bool
		wantCalls  int
		wantResult string
	}{
		{"descriptor says transient: retried", isFlaky, false, 2, metrics.CodeOK},
		{"no classifier: final", nil, true, 1, metrics.CodeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := metrics.New(reg, metrics.Options{})
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			f := &flaky{n: 1, err: errFlaky}
			s, err := stack.Open(t.Context(), "s3://bkt/p", nil, stack.Options{
				Registry: memRegistry(t, tc.transient),
				WrapBackend: func(s objstore.Store) objstore.Store {
					f.Store = s
					return f
				},
				Metrics:        m,
				TracerProvider: tp,
				Logger:         testLogger(t),
			})
			require.NoError(t, err)
			_, err = s.Put(t.Context(), "k", []byte("v"))
			require.Equal(t, tc.wantErr, err != nil, "put: %v", err)
			require.Equal(t, tc.wantCalls, f.calls, "backend calls")
			require.Equal(t, 1.0, storeRequests(t, reg, metrics.OpPut, tc.wantResult), "one counted call")
			require.Len(t, spans.Ended(), 1, "one span")
		})
	}
}

// TestWrapBackendFromContext: the public API reaches the seam through the
// context; an explicit Options.WrapBackend wins.
func TestWrapBackendFromContext(t *testing.T) {
	var seen []string
	wrap := func(name string) func(objstore.Store) objstore.Store {
		return func(s objstore.Store) objstore.Store { seen = append(seen, name); return s }
	}
	ctx := stack.WithWrapBackend(t.Context(), wrap("ctx"))
	_, err := stack.Open(ctx, "s3://bkt", nil, stack.Options{Registry: memRegistry(t, nil)})
	require.NoError(t, err)
	_, err = stack.Open(ctx, "s3://bkt", nil, stack.Options{Registry: memRegistry(t, nil), WrapBackend: wrap("opt")})
	require.NoError(t, err)
	require.Equal(t, []string{"ctx", "opt"}, seen)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, uri string
		options   map[string]string
		want      string
	}{
		{"bad scheme", "ftp://bucket/x", nil, `unsupported scheme "ftp"`},
		{"file with storage option", dir, map[string]string{"aws_region": "us-east-1"}, `storage option "aws_region" ` + all.Default().TakesOptions()},
		{"s3 unknown option", "s3://bkt/p", map[string]string{"aws_regoin": "x"}, `unknown storage option "aws_regoin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := stack.Open(t.Context(), tc.uri, tc.options, stack.Options{})
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, s)
		})
	}
}

// slowDownOnce answers the first PutObject with S3's 503 SlowDown without
// forwarding it, and passes everything else to the real server, counting
// the PutObjects it sees.
type slowDownOnce struct {
	mu   sync.Mutex
	puts int
}

func (f *slowDownOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && !strings.Contains(req.URL.RawQuery, "x-id=CreateBucket") {
		f.mu.Lock()
		f.puts++
		first := f.puts == 1
		f.mu.Unlock()
		if first {
			if req.Body != nil {
				_, _ = io.Copy(io.Discard, req.Body)
				_ = req.Body.Close()
			}
			body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`
			return &http.Response{
				StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
				Header:  http.Header{"Content-Type": {"application/xml"}},
				Body:    io.NopCloser(strings.NewReader(body)),
				Request: req, ProtoMajor: 1, ProtoMinor: 1,
			}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (f *slowDownOnce) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// TestS3RetriedOnceAndOnlyByUs runs against the real server: the bare
// backend sends a throttled PUT exactly once (the SDK's own retries are
// off), and the stack retries it exactly once more (no second retry layer),
// slowing the pacer and counting both requests.
func TestS3RetriedOnceAndOnlyByUs(t *testing.T) {
	srv := objstoretest.S3(t)

	bare := &slowDownOnce{}
	s, err := all.Default().Open(t.Context(), srv.URI("bare"), srv.Options(), objstore.OpenEnv{Transport: bare})
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "k", []byte("v"))
	require.Error(t, err, "the bare backend does not retry")
	require.Equal(t, 1, bare.count(), "the SDK sent the request once")

	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.Options{})
	fault := &slowDownOnce{}
	counter := metrics.NewRequestCounter(fault, m)
	pacer := retry.NewPacer(0)
	s, err = stack.Open(t.Context(), srv.URI("stacked"), srv.Options(), stack.Options{
		Transport: counter, Pacer: pacer, Metrics: m, Logger: testLogger(t), RetryMaxElapsed: 10 * time.Second,
	})
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, 2, fault.count(), "one failure, one retry")
	require.Equal(t, int64(2), counter.Counts()[s3op.OpPutObject])
	require.NotZero(t, pacer.Rate(), "the descriptor's throttle classifier slowed the pacer")
	require.Equal(t, 1.0, storeRequests(t, reg, metrics.OpPut, metrics.CodeOK))
}

// TestRetryLogLevel: a retried transient failure is a warning, but one the
// backend also calls a misconfiguration (an unreachable endpoint) is
// logged at debug: its final error says it once, in one line.
func TestRetryLogLevel(t *testing.T) {
	unreachable := &objstore.MisconfiguredError{Problem: "cannot reach the endpoint http://127.0.0.1:1: connection refused", Fix: "check aws_endpoint", Err: errFlaky}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"transient", errFlaky, "level=WARN"},
		{"unreachable endpoint", unreachable, "level=DEBUG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			f := &flaky{n: 1, err: tc.err}
			s, err := stack.Open(t.Context(), "s3://bkt/p", nil, stack.Options{
				Registry: memRegistry(t, isFlaky),
				WrapBackend: func(s objstore.Store) objstore.Store {
					f.Store = s
					return f
				},
				Logger: log,
			})
			require.NoError(t, err)
			_, err = s.Put(t.Context(), "k", []byte("v"))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			require.Len(t, lines, 1, buf.String())
			require.Contains(t, lines[0], `msg="store request retried"`)
			require.True(t, strings.HasPrefix(lines[0][strings.Index(lines[0], "level="):], tc.want), lines[0])
		})
	}
}

// Every HTTP backend names the operations of its own requests in
// reaper_store_http_requests_total: a purge's calls on GCS and Azure are
// told apart as on S3, none of them "other".
func TestEachBackendNamesItsRequests(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		ctx := t.Context()
		root := b.NewRoot(t)
		reg := prometheus.NewRegistry()
		m := metrics.New(reg, metrics.Options{})
		s, err := stack.Open(ctx, root.URI, root.Options, stack.Options{
			Transport: metrics.NewRequestCounter(nil, m), Metrics: m, Logger: testLogger(t),
		})
		require.NoError(t, err)
		opened := httpRequests(t, reg, string(b.Scheme))

		_, err = s.PutIfAbsent(ctx, "a/1", []byte("v"))
		require.NoError(t, err)
		_, err = s.Put(ctx, "a/2", []byte("v"))
		require.NoError(t, err)
		_, _, err = s.Get(ctx, "a/1", 10)
		require.NoError(t, err)
		_, err = s.Head(ctx, "a/2")
		require.NoError(t, err)
		require.NoError(t, s.List(ctx, "a/", func(objstore.Page) error { return nil }))
		require.NoError(t, s.Delete(ctx, "a/2"))
		require.NoError(t, s.DeleteBatch(ctx, []string{"a/1", "a/3"}))

		var got []string
		for op, n := range httpRequests(t, reg, string(b.Scheme)) {
			if n > opened[op] {
				got = append(got, op)
			}
		}
		slices.Sort(got)
		if b.Scheme == local.Scheme {
			require.Empty(t, got, "the local backend sends no HTTP")
			return
		}
		require.NotContains(t, got, "other", "%s requests the backend does not name", b.Name)
		// Put, get, head, list and delete are told apart (a batch may be
		// deletes or a batch call).
		require.GreaterOrEqual(t, len(got), 5, "operations of %s requests: %v", b.Name, got)
		if b.Scheme == s3op.Scheme {
			require.Equal(t, []string{s3op.OpDeleteObject, s3op.OpDeleteObjects, s3op.OpGetObject, s3op.OpHeadObject, s3op.OpListObjectsV2, s3op.OpPutObject}, got)
		}
	}, objstoretest.Shared()...)
}

// httpRequests sums reaper_store_http_requests_total of backend by
// operation.
func httpRequests(t *testing.T, reg *prometheus.Registry, backend string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "reaper_store_http_requests_total" {
			continue
		}
		for _, mm := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mm.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["backend"] == backend {
				out[labels["operation"]] += mm.GetCounter().GetValue()
			}
		}
	}
	return out
}
