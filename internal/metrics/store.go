package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// store counts every call of the Store it wraps.
type store struct {
	next objstore.Store
	m    *Metrics
}

var _ objstore.Store = (*store)(nil)

// WrapStore counts every call to s in reaper_objstore_requests_total{op,code}
// and times it in reaper_objstore_request_duration_seconds{op}. Codes: ok,
// not_found, precondition, canceled (the caller's context ended) and error
// (everything else, including a *objstore.BatchError). DeleteBatch counts
// once per call. List and Walk count once per page delivered, timed from the
// previous page (the caller's callback time excluded), approximating one
// request per page; a listing that fails counts one more request under its
// code, and one that delivers no page counts one. A nil m returns s.
func WrapStore(s objstore.Store, m *Metrics) objstore.Store {
	if m == nil {
		return s
	}
	return &store{next: s, m: m}
}

// Unwrap returns the wrapped store.
func (s *store) Unwrap() objstore.Store { return s.next }

// URI is the wrapped store's URI.
func (s *store) URI() string { return s.next.URI() }

// ResultCode classifies a store error for metrics and spans: CodeOK, CodeNotFound,
// CodePrecondition, CodeCanceled (ctx is done, or err is context.Canceled)
// or CodeError.
func ResultCode(ctx context.Context, err error) string {
	var batch *objstore.BatchError
	switch {
	case err == nil:
		return CodeOK
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.As(err, &batch):
		return CodeError
	case errors.Is(err, objstore.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, objstore.ErrPrecondition):
		return CodePrecondition
	default:
		return CodeError
	}
}

// observe records one request of op that started at start.
func (s *store) observe(ctx context.Context, op string, start time.Time, err error) {
	s.m.storeRequests.WithLabelValues(op, ResultCode(ctx, err)).Inc()
	s.m.storeDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (s *store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	pc := s.pageCounter(ctx, OpList)
	err := s.next.List(ctx, prefix, func(p objstore.Page) error {
		return pc.page(func() error { return fn(p) })
	})
	return pc.done(err)
}

func (s *store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	pc := s.pageCounter(ctx, OpWalk)
	err := s.next.Walk(ctx, prefix, func(objs []objstore.Object) error {
		return pc.page(func() error { return fn(objs) })
	})
	return pc.done(err)
}

func (s *store) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	start := time.Now()
	body, obj, err := s.next.Get(ctx, key, limit)
	s.observe(ctx, OpGet, start, err)
	return body, obj, err
}

func (s *store) Head(ctx context.Context, key string) (objstore.Object, error) {
	start := time.Now()
	obj, err := s.next.Head(ctx, key)
	s.observe(ctx, OpHead, start, err)
	return obj, err
}

func (s *store) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	start := time.Now()
	obj, err := s.next.Put(ctx, key, body)
	s.observe(ctx, OpPut, start, err)
	return obj, err
}

func (s *store) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	start := time.Now()
	obj, err := s.next.PutIfAbsent(ctx, key, body)
	s.observe(ctx, OpPutIfAbsent, start, err)
	return obj, err
}

func (s *store) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	start := time.Now()
	obj, err := s.next.PutIfMatch(ctx, key, body, etag)
	s.observe(ctx, OpPutIfMatch, start, err)
	return obj, err
}

func (s *store) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.next.Delete(ctx, key)
	s.observe(ctx, OpDelete, start, err)
	return err
}

func (s *store) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	start := time.Now()
	err := s.next.DeleteIfMatch(ctx, key, etag)
	s.observe(ctx, OpDeleteIfMatch, start, err)
	return err
}

func (s *store) DeleteBatch(ctx context.Context, keys []string) error {
	start := time.Now()
	err := s.next.DeleteBatch(ctx, keys)
	s.observe(ctx, OpDeleteBatch, start, err)
	return err
}

// PruneEmpty is not counted: it sends no request to S3 and removes empty
// directories of a local disk with syscalls.
func (s *store) PruneEmpty(ctx context.Context, prefix string) error {
	return s.next.PruneEmpty(ctx, prefix)
}

// Now is not counted: backends answer it from their last response (S3's
// Date header) and count the rare request it sends in the transport.
func (s *store) Now(ctx context.Context) (time.Time, error) { return s.next.Now(ctx) }

// pageCounter counts the pages of one listing.
type pageCounter struct {
	s     *store
	ctx   context.Context
	op    string
	start time.Time // when the current page was requested
	pages int
	fnErr error
}

func (s *store) pageCounter(ctx context.Context, op string) *pageCounter {
	return &pageCounter{s: s, ctx: ctx, op: op, start: time.Now()}
}

// page counts a delivered page, then runs the caller's callback.
func (pc *pageCounter) page(fn func() error) error {
	pc.s.observe(pc.ctx, pc.op, pc.start, nil)
	pc.pages++
	err := fn()
	pc.fnErr = err
	pc.start = time.Now()
	return err
}

// done counts a listing failure, or the one request of an empty listing; an
// error returned by the callback was no store request and is not counted.
func (pc *pageCounter) done(err error) error {
	switch {
	case err != nil && err == pc.fnErr: // the callback's own error, returned unchanged
	case err != nil || pc.pages == 0:
		pc.s.observe(pc.ctx, pc.op, pc.start, err)
	}
	return err
}
