package objstore

import "net/http"

// This file owns the connection pool of the HTTP backends (S3, GCS, Azure).
// Go's http.DefaultTransport keeps two idle connections per host: a purge
// with 16 delete batches in flight, four tables at once and the guard's
// reads beside them closed all but two connections after every answer and
// dialled new ones (a TLS handshake each against a real endpoint). Every
// backend's requests go through one transport sized for the concurrency
// reaper runs at.

// HTTPIdleConnsPerHost is how many idle connections to one endpoint are
// kept for reuse: limits.table_concurrency (4) x limits.max_delete_concurrency
// (16) batches, plus room for the guard's reads and the leases.
const HTTPIdleConnsPerHost = 128

// NewHTTPTransport returns http.DefaultTransport's settings (proxy from the
// environment, timeouts) with a pool of HTTPIdleConnsPerHost, HTTP/1.1
// only, and connections that refuse to write a fenced request past its
// deadline (wirefence.go).
func NewHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, 2*HTTPIdleConnsPerHost)
	t.MaxIdleConnsPerHost = HTTPIdleConnsPerHost
	t.ForceAttemptHTTP2 = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.DialContext = wireDialer(t.DialContext)
	return t
}
