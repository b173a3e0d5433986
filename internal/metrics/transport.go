package metrics

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// RequestCounter is an http.RoundTripper that counts S3 requests by
// operation and status code, in reaper_s3_http_requests_total and in
// in-memory totals (Counts), so benchmarks can state exactly how many
// requests a purge sends. Hand it to stack.Options.Transport.
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
	op := S3Operation(req)
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
	return resp, err
}

// Counts returns a copy of the requests sent so far by operation (the S3*
// constants), whatever their outcome.
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

// S3Operation names the S3 operation of req. Requests built by the AWS SDK
// carry their operation name in the context, which is used when it is one
// of the S3* constants; anything else the SDK sends is S3Other. Other
// requests are classified from method, query and path, assuming path-style
// addressing ("/bucket" or "/bucket/key"): GET with list-type=2 is
// ListObjectsV2, POST with ?delete is DeleteObjects, PUT on a bare bucket is
// CreateBucket, plain GET, HEAD, PUT and DELETE on a key are the object
// operations, and everything else (sub-resources, multipart, copies) is
// S3Other.
func S3Operation(req *http.Request) string {
	if name := awsmiddleware.GetOperationName(req.Context()); name != "" {
		if slices.Contains(s3Operations, name) {
			return name
		}
		return S3Other
	}
	q := req.URL.Query()
	if req.Method == http.MethodGet && q.Get("list-type") == "2" {
		return S3ListObjectsV2
	}
	if req.Method == http.MethodPost && q.Has("delete") {
		return S3DeleteObjects
	}
	// Any other query parameter is a sub-resource or multipart request,
	// except the x-id the SDK adds to name the operation.
	q.Del("x-id")
	if len(q) > 0 || req.Header.Get("X-Amz-Copy-Source") != "" {
		return S3Other
	}
	path := strings.Trim(req.URL.Path, "/")
	if path == "" {
		return S3Other
	}
	onKey := strings.Contains(path, "/")
	switch {
	case req.Method == http.MethodPut && !onKey:
		return S3CreateBucket
	case !onKey:
		return S3Other
	case req.Method == http.MethodGet:
		return S3GetObject
	case req.Method == http.MethodHead:
		return S3HeadObject
	case req.Method == http.MethodPut:
		return S3PutObject
	case req.Method == http.MethodDelete:
		return S3DeleteObject
	default:
		return S3Other
	}
}
