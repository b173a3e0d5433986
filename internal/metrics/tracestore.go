package metrics

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// TracerName is the instrumentation scope of WrapStoreTracing's spans.
const TracerName = "github.com/lance-reaper/reaper/internal/objstore"

// Span attribute keys set by WrapStoreTracing.
const (
	AttrStoreURI = attribute.Key("objstore.uri")
	AttrKey      = attribute.Key("objstore.key")
	AttrPrefix   = attribute.Key("objstore.prefix")
	AttrKeyCount = attribute.Key("objstore.key_count")
	AttrSize     = attribute.Key("objstore.size")
	AttrPages    = attribute.Key("objstore.pages")
	AttrObjects  = attribute.Key("objstore.objects")
	AttrResult   = attribute.Key("objstore.result")
)

// tracingStore opens one span per call of the Store it wraps.
type tracingStore struct {
	next   objstore.Store
	tracer trace.Tracer
}

var _ objstore.Store = (*tracingStore)(nil)

// WrapStoreTracing opens one client span per call to s, named "objstore."
// plus the operation (objstore.get, objstore.delete_batch, ...), carrying
// the store URI, the key or prefix, the key count of a batch, the body size
// of a write, the pages and objects a listing delivered, and the result
// code (see ResultCode). Only CodeError sets the span status to Error and
// records the error: not-found and precondition answers are expected, and
// cancellation is not a fault. A nil tp returns s.
func WrapStoreTracing(s objstore.Store, tp trace.TracerProvider) objstore.Store {
	if tp == nil {
		return s
	}
	return &tracingStore{next: s, tracer: tp.Tracer(TracerName)}
}

// Unwrap returns the wrapped store.
func (s *tracingStore) Unwrap() objstore.Store { return s.next }

// URI is the wrapped store's URI.
func (s *tracingStore) URI() string { return s.next.URI() }

func (s *tracingStore) start(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, AttrStoreURI.String(s.next.URI()))
	return s.tracer.Start(ctx, "objstore."+op,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// end records the outcome on span and ends it.
func end(ctx context.Context, span trace.Span, err error) {
	code := ResultCode(ctx, err)
	span.SetAttributes(AttrResult.String(code))
	if code == CodeError {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (s *tracingStore) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	ctx, span := s.start(ctx, OpList, AttrPrefix.String(prefix))
	var pages, objects int
	err := s.next.List(ctx, prefix, func(p objstore.Page) error {
		pages++
		objects += len(p.Objects)
		return fn(p)
	})
	span.SetAttributes(AttrPages.Int(pages), AttrObjects.Int(objects))
	end(ctx, span, err)
	return err
}

func (s *tracingStore) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	ctx, span := s.start(ctx, OpWalk, AttrPrefix.String(prefix))
	var pages, objects int
	err := s.next.Walk(ctx, prefix, func(objs []objstore.Object) error {
		pages++
		objects += len(objs)
		return fn(objs)
	})
	span.SetAttributes(AttrPages.Int(pages), AttrObjects.Int(objects))
	end(ctx, span, err)
	return err
}

func (s *tracingStore) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	ctx, span := s.start(ctx, OpGet, AttrKey.String(key))
	body, obj, err := s.next.Get(ctx, key, limit)
	span.SetAttributes(AttrSize.Int(len(body)))
	end(ctx, span, err)
	return body, obj, err
}

func (s *tracingStore) Head(ctx context.Context, key string) (objstore.Object, error) {
	ctx, span := s.start(ctx, OpHead, AttrKey.String(key))
	obj, err := s.next.Head(ctx, key)
	end(ctx, span, err)
	return obj, err
}

func (s *tracingStore) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	ctx, span := s.start(ctx, OpPut, AttrKey.String(key), AttrSize.Int(len(body)))
	obj, err := s.next.Put(ctx, key, body)
	end(ctx, span, err)
	return obj, err
}

func (s *tracingStore) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	ctx, span := s.start(ctx, OpPutIfAbsent, AttrKey.String(key), AttrSize.Int(len(body)))
	obj, err := s.next.PutIfAbsent(ctx, key, body)
	end(ctx, span, err)
	return obj, err
}

func (s *tracingStore) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	ctx, span := s.start(ctx, OpPutIfMatch, AttrKey.String(key), AttrSize.Int(len(body)))
	obj, err := s.next.PutIfMatch(ctx, key, body, etag)
	end(ctx, span, err)
	return obj, err
}

func (s *tracingStore) Delete(ctx context.Context, key string) error {
	ctx, span := s.start(ctx, OpDelete, AttrKey.String(key))
	err := s.next.Delete(ctx, key)
	end(ctx, span, err)
	return err
}

func (s *tracingStore) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	ctx, span := s.start(ctx, OpDeleteIfMatch, AttrKey.String(key))
	err := s.next.DeleteIfMatch(ctx, key, etag)
	end(ctx, span, err)
	return err
}

func (s *tracingStore) DeleteBatch(ctx context.Context, keys []string) error {
	ctx, span := s.start(ctx, OpDeleteBatch, AttrKeyCount.Int(len(keys)))
	err := s.next.DeleteBatch(ctx, keys)
	end(ctx, span, err)
	return err
}

func (s *tracingStore) PruneEmpty(ctx context.Context, prefix string) error {
	ctx, span := s.start(ctx, OpPruneEmpty, AttrPrefix.String(prefix))
	err := s.next.PruneEmpty(ctx, prefix)
	end(ctx, span, err)
	return err
}

// Now opens no span: it is usually answered without a request.
func (s *tracingStore) Now(ctx context.Context) (time.Time, error) { return s.next.Now(ctx) }
