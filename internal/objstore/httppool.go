package objstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

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

// DialTimeout bounds one TCP connect. http.DefaultTransport's 30 s let an
// endpoint that drops connections (a firewall, a wrong private address)
// stall every attempt for half a minute, two minutes of retries in all,
// before a bare "i/o timeout". A store answers a connect in milliseconds;
// a lost SYN is resent after one second. A connect this slow is an
// unreachable endpoint, like a refused one (DialTimeoutError,
// objstore.Unreachable), and its wait counts toward the retry budget of
// such a failure: the command says "cannot reach the endpoint" at once.
const DialTimeout = 3 * time.Second

// NewHTTPTransport returns http.DefaultTransport's settings (proxy from the
// environment, timeouts) with a pool of HTTPIdleConnsPerHost, HTTP/1.1
// only, connects bounded by DialTimeout, and connections that refuse to
// write a fenced request past its deadline (wirefence.go).
func NewHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, 2*HTTPIdleConnsPerHost)
	t.MaxIdleConnsPerHost = HTTPIdleConnsPerHost
	t.ForceAttemptHTTP2 = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	t.DialContext = wireDialer(boundedDial(d.DialContext, DialTimeout))
	return t
}

// boundedDial gives every connect of dial at most limit; a connect cut
// short by that limit, and by nothing else (not its caller's cancellation
// or earlier deadline), fails with a *DialTimeoutError. The dialer's own
// socket deadline, not the context's timer, usually ends such a connect,
// so the limit is told by the deadline it set, not by the context's cause.
func boundedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), limit time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		by := time.Now().Add(limit)
		dctx, cancel := context.WithDeadline(ctx, by)
		defer cancel()
		c, err := dial(dctx, network, addr)
		if err == nil || ctx.Err() != nil {
			return c, err
		}
		if d, ok := ctx.Deadline(); ok && !d.After(by) {
			return c, err // the caller's deadline bound it
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return nil, &DialTimeoutError{Addr: addr, Limit: limit, Err: err}
		}
		return c, err
	}
}

// DialTimeoutError is a connect that nothing answered within Limit. It is
// a net.Error that timed out, so every backend retries it as transient;
// objstore.Unreachable reports it as an endpoint that cannot be reached.
type DialTimeoutError struct {
	Addr  string
	Limit time.Duration
	Err   error
}

func (e *DialTimeoutError) Error() string {
	return fmt.Sprintf("connect to %s: no answer within %s: %v", e.Addr, e.Limit, e.Err)
}

func (e *DialTimeoutError) Unwrap() error { return e.Err }

// Timeout and Temporary make it a net.Error that timed out.
func (e *DialTimeoutError) Timeout() bool   { return true }
func (e *DialTimeoutError) Temporary() bool { return true }
