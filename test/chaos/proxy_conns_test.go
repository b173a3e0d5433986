package chaos

import (
	"bufio"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file owns what the proxy's settle waits for and how it tells a
// request that straddles a stop: every byte the stopped client wrote
// before it stopped has been read, and each request it completes has been
// answered by the server; a request the proxy is still waiting for bytes of
// (its header or body cut by the stop) will be reset. Counting handlers
// alone missed a bodiless request (a DELETE) that A wrote just before
// SIGSTOP but that the proxy parsed after settle had looked: it landed
// while B held the lease, an artefact of the harness (a real server applies
// it at once, within the protocol's margin) that read as A purging a table
// it no longer owned.

// proxyConn is one client connection of the proxy. A request is in
// progress on it (busy) from its first byte read until its handler is
// done; gen is the proxy's generation at that first byte.
type proxyConn struct {
	net.Conn
	p *proxy

	// Under p.connMu.
	busy, inRead bool
	gen          int64
}

func (c *proxyConn) Read(b []byte) (int, error) {
	p := c.p
	p.connMu.Lock()
	c.inRead = true
	p.connMu.Unlock()
	n, err := c.Conn.Read(b)
	p.connMu.Lock()
	c.inRead = false
	if n > 0 && !c.busy {
		c.busy, c.gen = true, p.gen.Load()
	}
	p.connMu.Unlock()
	return n, err
}

// idle ends the connection's current request.
func (c *proxyConn) idle() {
	c.p.connMu.Lock()
	c.busy = false
	c.p.connMu.Unlock()
}

// straddled reports whether the client was stopped or resumed since the
// current request's first byte.
func (c *proxyConn) straddled() bool {
	c.p.connMu.Lock()
	defer c.p.connMu.Unlock()
	return c.busy && c.gen != c.p.gen.Load()
}

func (c *proxyConn) Close() error {
	c.p.connMu.Lock()
	c.busy = false
	delete(c.p.conns, c)
	c.p.connMu.Unlock()
	return c.Conn.Close()
}

// proxyListener makes every accepted connection a proxyConn.
type proxyListener struct {
	net.Listener
	p *proxy
}

func (l proxyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &proxyConn{Conn: c, p: l.p}
	l.p.connMu.Lock()
	if l.p.conns == nil {
		l.p.conns = map[*proxyConn]bool{}
	}
	l.p.conns[pc] = true
	l.p.connMu.Unlock()
	return pc, nil
}

type proxyConnKey struct{}

// connOf is the proxyConn a request came on.
func connOf(ctx context.Context) *proxyConn {
	c, _ := ctx.Value(proxyConnKey{}).(*proxyConn)
	return c
}

// quiet reports whether nothing the client sent is still on its way: no
// request waiting for the server's answer, no request read whose handler
// is not done unless the proxy waits for more of its bytes (a stop cut it),
// and no bytes queued in the kernel on the proxy's connections (either
// end).
func (p *proxy) quiet(t testing.TB) bool {
	if p.pending.Load() != 0 {
		return false
	}
	p.connMu.Lock()
	for c := range p.conns {
		if c.busy && !c.inRead {
			p.connMu.Unlock()
			return false
		}
	}
	p.connMu.Unlock()
	return queuesEmpty(t, p.port())
}

func (p *proxy) port() int {
	return p.srv.Listener.Addr().(*net.TCPAddr).Port
}

// queuesEmpty reports whether no byte sent to port on an established TCP
// connection waits in the kernel (/proc/net/tcp): in the sender's queue
// until the proxy's end acknowledges it, then in the proxy's until the
// proxy reads it.
func queuesEmpty(t testing.TB, port int) bool {
	t.Helper()
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatalf("proxy: %v", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 5 || fs[3] != "01" { // ESTABLISHED
				continue
			}
			tx, rx, _ := strings.Cut(fs[4], ":")
			// The client's unacknowledged sends, the proxy's unread
			// receives (not the answers a stopped client leaves unread).
			if endPort(fs[2]) == port && tx != "00000000" || endPort(fs[1]) == port && rx != "00000000" {
				f.Close()
				return false
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("proxy: read %s: %v", file, err)
		}
	}
	return true
}

// endPort is the port of a /proc/net/tcp address ("0100007F:1F90").
func endPort(addr string) int {
	_, hex, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(hex, 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

// settle waits until the proxy is quiet, twice in a row a poll apart (a read that just emptied the kernel's queue marks its connection
// busy a few instructions later). A bounded poll.
func (p *proxy) settle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for quietSeen := false; ; {
		q := p.quiet(t)
		if q && quietSeen {
			return
		}
		quietSeen = q
		if time.Now().After(deadline) {
			t.Fatalf("proxy: still not quiet after 30s: %d request(s) waiting for the server", p.pending.Load())
		}
		time.Sleep(2 * time.Millisecond) // poll
	}
}
