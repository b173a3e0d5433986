package objstore

import (
	"context"
	"fmt"
	"net"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"
)

// This file owns the fence's last check on the wire. Fenced asks the fence
// before it calls the client, but between that check and the moment the
// transport writes the request to its socket lie the client's encoding,
// signing, the pool's connection hand-off and the transport's write
// goroutine. A process frozen there (SIGSTOP, a paused VM) for longer than
// its lease writes the request when it resumes, after a takeover: with a
// GCS or Azure batch of 32 single deletes in flight, some goroutine is in
// that window at almost any instant, and the chaos suite saw a resumed
// purge delete manifests of a table re-created under the same name. The
// context's deadline does not help: the write goroutine runs on before the
// runtime gets to the expired timer.
//
// So every connection of NewHTTPTransport checks, immediately before each
// write syscall, the deadline of the fenced request being written on it,
// and refuses (closing the connection: a request cut short is never
// completed) once it has passed. That leaves PROTOCOL.md's assumption A2
// the few instructions between that check and the syscall, as on a local
// root. It needs one request per connection at a time, so the transport
// speaks HTTP/1.1 only (S3 and Blob Storage do anyway).

// wireConn is a connection whose writes the deadline of the fenced request
// being written on it can refuse.
type wireConn struct {
	net.Conn
	mu  sync.Mutex
	arm *wireArm // the fenced request now on this connection, if any
}

// wireArm is one fenced request's deadline on the wire.
type wireArm struct {
	by      time.Time // monotonic: a pause advances it
	refused atomic.Bool
}

func (c *wireConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	a := c.arm
	c.mu.Unlock()
	if a != nil {
		if late := time.Since(a.by); late >= 0 {
			a.refused.Store(true)
			c.Conn.Close()
			return 0, fmt.Errorf("%w: refused before writing it, %v past its deadline", ErrRequestDeadline, late.Round(time.Millisecond))
		}
	}
	return c.Conn.Write(p)
}

// set arms c with a, or disarms it when a is nil.
func (c *wireConn) set(a *wireArm) {
	c.mu.Lock()
	c.arm = a
	c.mu.Unlock()
}

// clear disarms c if a is still its request (the connection may already
// carry another).
func (c *wireConn) clear(a *wireArm) {
	c.mu.Lock()
	if c.arm == a {
		c.arm = nil
	}
	c.mu.Unlock()
}

// wireConnOf finds the wireConn under a connection the transport hands
// out (a TLS connection wraps it).
func wireConnOf(c net.Conn) *wireConn {
	for c != nil {
		if w, ok := c.(*wireConn); ok {
			return w
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// withWireDeadline arms every connection ctx's request gets (a retry by
// the transport gets another) with by, until the answer starts: the
// request has been written by then, unless the answer is a 1xx (a body
// still to come), which arms it again. done disarms the last one, should
// no final answer come; refused reports whether a write was refused.
func withWireDeadline(ctx context.Context, by time.Time) (rctx context.Context, refused func() bool, done func()) {
	a := &wireArm{by: by}
	var mu sync.Mutex
	var last *wireConn
	done = func() {
		mu.Lock()
		w := last
		mu.Unlock()
		if w != nil {
			w.clear(a)
		}
	}
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			w := wireConnOf(info.Conn)
			if w == nil {
				return
			}
			w.set(a)
			mu.Lock()
			last = w
			mu.Unlock()
		},
		// Not WroteRequest: it fires once the request is in the
		// transport's buffer, before the buffer is written out.
		GotFirstResponseByte: func() { done() },
		// A "100 Continue" answers before the body is sent (an S3 upload
		// past the SDK's threshold): the body is still to be written.
		Got1xxResponse: func(int, textproto.MIMEHeader) error {
			mu.Lock()
			w := last
			mu.Unlock()
			if w != nil {
				w.set(a)
			}
			return nil
		},
	}
	return httptrace.WithClientTrace(ctx, trace), a.refused.Load, done
}

// wireDialer wraps dial so that every connection it makes is a wireConn.
func wireDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: c}, nil
	}
}
