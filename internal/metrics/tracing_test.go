package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// clearOTelEnv unsets every variable SetupTracing reads (t.Setenv forbids
// t.Parallel, so these tests run sequentially).
func clearOTelEnv(t *testing.T) {
	for _, env := range []string{EnvOTLPEndpoint, EnvOTLPTracesEndpoint, EnvSDKDisabled, EnvTracesExporter,
		EnvOTLPProtocol, EnvOTLPTracesProtocol, "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(env, "")
	}
}

func requireNoop(t *testing.T, tp trace.TracerProvider) {
	t.Helper()
	_, span := tp.Tracer("test").Start(t.Context(), "x")
	defer span.End()
	require.False(t, span.IsRecording(), "noop provider records nothing")
}

func TestSetupTracingNoop(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"unset":    {},
		"disabled": {EnvOTLPEndpoint: "http://127.0.0.1:1", EnvSDKDisabled: "true"},
		"none":     {EnvOTLPTracesEndpoint: "http://127.0.0.1:1", EnvTracesExporter: "none"},
	} {
		t.Run(name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			tp, shutdown := SetupTracing(t.Context(), TracingOptions{ServiceName: "reaper", Version: "test"})
			requireNoop(t, tp)
			require.NoError(t, shutdown(t.Context()))
		})
	}
}

// Values are case-insensitive and an unknown one is warned about and
// ignored, never fatal: before, OTEL_TRACES_EXPORTER=console or =OTLP, or
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc, made reaper exit 2 and purge nothing.
func TestSetupTracingIgnoresWhatItCannotDo(t *testing.T) {
	for name, tc := range map[string]struct {
		env       map[string]string
		recording bool
		warns     string
	}{
		"unknown exporter": {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvTracesExporter: "zipkin"}, true, "zipkin"},
		"upper-case otlp":  {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvTracesExporter: "OTLP"}, true, ""},
		"upper-case none":  {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvTracesExporter: "NONE"}, false, ""},
		"disabled TRUE":    {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvSDKDisabled: "TRUE"}, false, ""},
		"grpc":             {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvOTLPProtocol: "grpc"}, true, ""},
		"http/json":        {map[string]string{EnvOTLPEndpoint: "http://127.0.0.1:1", EnvOTLPProtocol: "http/json"}, true, "http/json"},
		"console":          {map[string]string{EnvTracesExporter: "console"}, true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var logs strings.Builder
			var console strings.Builder
			tp, shutdown := SetupTracing(t.Context(), TracingOptions{
				ServiceName: "reaper", Version: "test", Console: &console,
				Logger:       slog.New(slog.NewJSONHandler(&logs, nil)),
				FlushTimeout: 200 * time.Millisecond,
			})
			_, span := tp.Tracer("test").Start(t.Context(), "pass")
			require.Equal(t, tc.recording, span.IsRecording())
			span.End()
			_ = shutdown(t.Context())
			if tc.warns != "" {
				require.Contains(t, logs.String(), tc.warns)
			} else {
				require.Empty(t, logs.String())
			}
			if name == "console" {
				require.Contains(t, console.String(), `"Name":"pass"`)
			}
		})
	}
}

// A collector that answers 503, or never answers, costs a one-shot run at
// most the flush timeout at shutdown (the exporter alone retries for 30 s
// and more).
func TestSetupTracingFlushIsBounded(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	for name, h := range map[string]http.HandlerFunc{
		"503": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
		"never answers": func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			// Before Close: let a handler still holding the exporter's
			// request go.
			defer once.Do(func() { close(release) })
			clearOTelEnv(t)
			t.Setenv(EnvOTLPEndpoint, srv.URL)
			tp, shutdown := SetupTracing(t.Context(), TracingOptions{ServiceName: "reaper", FlushTimeout: 300 * time.Millisecond})
			_, span := tp.Tracer("test").Start(t.Context(), "pass")
			span.End()
			start := time.Now()
			_ = shutdown(t.Context())
			require.Less(t, time.Since(start), 3*time.Second, "shutdown waited for the collector")
		})
	}
}

// TestSetupTracingExports sends a span to an httptest OTLP receiver and
// checks the resource names the service.
func TestSetupTracingExports(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
		reqs  []*collectortrace.ExportTraceServiceRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		err := proto.Unmarshal(body, &req)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		if err == nil {
			reqs = append(reqs, &req)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	clearOTelEnv(t)
	t.Setenv(EnvOTLPEndpoint, srv.URL)

	tp, shutdown := SetupTracing(t.Context(), TracingOptions{ServiceName: "reaper", Version: "v1.2.3"})
	_, span := tp.Tracer("test").Start(t.Context(), "pass")
	require.True(t, span.IsRecording())
	span.End()
	require.NoError(t, shutdown(t.Context()), "shutdown flushes")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"POST /v1/traces"}, paths)
	require.Len(t, reqs, 1)
	rs := reqs[0].GetResourceSpans()
	require.Len(t, rs, 1)
	attrs := map[string]string{}
	for _, kv := range rs[0].GetResource().GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	require.Equal(t, "reaper", attrs["service.name"])
	require.Equal(t, "v1.2.3", attrs["service.version"])
	require.Equal(t, "pass", rs[0].GetScopeSpans()[0].GetSpans()[0].GetName())
}

// traceReceiver is an OTLP/gRPC trace receiver: the collector's service,
// served by grpc-go on a loopback port, keeping what it is sent.
type traceReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
}

func (r *traceReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc (any case) exports over gRPC: the span
// reaches a gRPC receiver, with the service named.
func TestSetupTracingExportsOverGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	recv := &traceReceiver{}
	collectortrace.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	clearOTelEnv(t)
	t.Setenv(EnvOTLPEndpoint, "http://"+l.Addr().String()) // http: plaintext gRPC
	t.Setenv(EnvOTLPProtocol, "GRPC")
	tp, shutdown := SetupTracing(t.Context(), TracingOptions{ServiceName: "reaper", Version: "v1.2.3"})
	_, span := tp.Tracer("test").Start(t.Context(), "pass")
	require.True(t, span.IsRecording())
	span.End()
	require.NoError(t, shutdown(t.Context()), "shutdown flushes")

	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Len(t, recv.reqs, 1, "one export over gRPC")
	rs := recv.reqs[0].GetResourceSpans()
	require.Len(t, rs, 1)
	attrs := map[string]string{}
	for _, kv := range rs[0].GetResource().GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	require.Equal(t, "reaper", attrs["service.name"])
	require.Equal(t, "pass", rs[0].GetScopeSpans()[0].GetSpans()[0].GetName())
}

func newRecorded(t *testing.T) (*tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return sr, tp
}

func TestWrapStoreTracingConformance(t *testing.T) {
	_, tp := newRecorded(t)
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		return WrapStoreTracing(newMemory(), tp)
	}, objstoretest.WithPageSize(testPageSize))
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestWrapStoreTracingSpans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sr, tp := newRecorded(t)
	mem := newMemory()
	s := WrapStoreTracing(mem, tp)
	require.Same(t, mem, s.(interface{ Unwrap() objstore.Store }).Unwrap())
	require.Same(t, objstore.Store(mem), WrapStoreTracing(mem, nil))

	for _, k := range []string{"t/a", "t/b", "t/c/d"} {
		_, err := s.Put(ctx, k, []byte("body"))
		require.NoError(t, err)
	}
	_, err := s.Head(ctx, "t/missing")
	require.ErrorIs(t, err, objstore.ErrNotFound)
	require.NoError(t, s.List(ctx, "t/", func(objstore.Page) error { return nil }))
	require.NoError(t, s.DeleteBatch(ctx, []string{"t/a", "t/b"}))
	_, _, err = s.Get(ctx, "/bad", 1<<20)
	require.ErrorIs(t, err, objstore.ErrInvalidKey)

	spans := sr.Ended()
	require.Len(t, spans, 7)
	names := make([]string, len(spans))
	for i, sp := range spans {
		names[i] = sp.Name()
		require.Equal(t, trace.SpanKindClient, sp.SpanKind())
		require.Equal(t, TracerName, sp.InstrumentationScope().Name)
		require.Equal(t, "memory://", spanAttrs(sp)[AttrStoreURI].AsString())
	}
	require.Equal(t, []string{"objstore.put", "objstore.put", "objstore.put", "objstore.head",
		"objstore.list", "objstore.delete_batch", "objstore.get"}, names)

	put := spanAttrs(spans[0])
	require.Equal(t, "t/a", put[AttrKey].AsString())
	require.EqualValues(t, 4, put[AttrSize].AsInt64())
	require.Equal(t, CodeOK, put[AttrResult].AsString())
	require.Equal(t, codes.Unset, spans[0].Status().Code)

	head := spanAttrs(spans[3])
	require.Equal(t, CodeNotFound, head[AttrResult].AsString())
	require.Equal(t, codes.Unset, spans[3].Status().Code, "not-found is expected, not an error")
	require.Empty(t, spans[3].Events())

	list := spanAttrs(spans[4])
	require.Equal(t, "t/", list[AttrPrefix].AsString())
	require.EqualValues(t, 1, list[AttrPages].AsInt64())
	require.EqualValues(t, 2, list[AttrObjects].AsInt64(), "t/c/ is a prefix, not an object")

	batch := spanAttrs(spans[5])
	require.EqualValues(t, 2, batch[AttrKeyCount].AsInt64())

	get := spanAttrs(spans[6])
	require.Equal(t, CodeError, get[AttrResult].AsString())
	require.Equal(t, codes.Error, spans[6].Status().Code)
	require.Len(t, spans[6].Events(), 1, "the error is recorded")
}
