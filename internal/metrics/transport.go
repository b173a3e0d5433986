package metrics

import (
	"maps"
	"net/http"
	"strconv"
	"sync"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// RequestCounter is an http.RoundTripper that counts HTTP requests by S3
// operation and status code, in reaper_s3_http_requests_total and in
// in-memory totals (Counts), so benchmarks can state exactly how many
// requests a purge sends; as a backend's transport (ForBackend, which
// stack.Open uses) also by the backend's own operation names, in
// reaper_store_http_requests_total. Hand it to stack.Options.Transport.
type RequestCounter struct {
	next http.RoundTripper
	m    *Metrics

	mu     sync.Mutex
	counts map[string]int64
}

var _ http.RoundTripper = (*RequestCounter)(nil)

// NewRequestCounter counts the requests sent through next (when nil,
// objstore.NewHTTPTransport: a pool sized for reaper's concurrency, not
// http.DefaultTransport's two idle connections per host). m may be nil:
// Counts still works.
func NewRequestCounter(next http.RoundTripper, m *Metrics) *RequestCounter {
	if next == nil {
		next = objstore.NewHTTPTransport()
	}
	return &RequestCounter{next: next, m: m, counts: make(map[string]int64)}
}

// RoundTrip sends req and counts it, also when no response arrives (code
// "error" in the metric).
func (c *RequestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, _, err := c.send(req)
	return resp, err
}

// send sends req, counts it by S3 operation and returns its code.
func (c *RequestCounter) send(req *http.Request) (*http.Response, string, error) {
	op := s3.Operation(req)
	resp, err := c.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
	if c.m != nil {
		c.m.s3Requests.WithLabelValues(op, code).Inc()
	}
	return resp, code, err
}

// ForBackend is the counter as the transport of one backend's stores: it
// also counts each request in reaper_store_http_requests_total under the
// backend's name and the operation operation names (nil: "other").
func (c *RequestCounter) ForBackend(backend string, operation func(*http.Request) string) http.RoundTripper {
	return backendCounter{c: c, backend: backend, operation: operation}
}

// backendCounter is a RequestCounter that knows its backend.
type backendCounter struct {
	c         *RequestCounter
	backend   string
	operation func(*http.Request) string
}

func (b backendCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	op := "other"
	if b.operation != nil {
		op = b.operation(req)
	}
	resp, code, err := b.c.send(req)
	if b.c.m != nil {
		b.c.m.storeHTTPRequests.WithLabelValues(b.backend, op, code).Inc()
	}
	return resp, err
}

// Counts returns a copy of the requests sent so far by S3 operation (the
// s3.Op* constants), whatever their outcome.
func (c *RequestCounter) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Total is the number of requests sent so far.
func (c *RequestCounter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Reset zeroes the in-memory totals (not the Prometheus counter).
func (c *RequestCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}
