package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
			tp, shutdown, err := SetupTracing(t.Context(), "reaper", "test")
			require.NoError(t, err)
			requireNoop(t, tp)
			require.NoError(t, shutdown(t.Context()))
		})
	}
}

func TestSetupTracingRejects(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"exporter": {EnvOTLPEndpoint: "http://127.0.0.1:1", EnvTracesExporter: "zipkin"},
		"grpc":     {EnvOTLPEndpoint: "http://127.0.0.1:1", EnvOTLPProtocol: "grpc"},
	} {
		t.Run(name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			_, _, err := SetupTracing(t.Context(), "reaper", "test")
			require.Error(t, err)
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

	tp, shutdown, err := SetupTracing(t.Context(), "reaper", "v1.2.3")
	require.NoError(t, err)
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
	_, _, err = s.Get(ctx, "/bad")
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
