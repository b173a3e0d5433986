package objstore

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBoundedDialTellsItsOwnTimeout: a connect cut short by DialTimeout's
// bound is a DialTimeoutError (a net.Error that timed out: retried as
// transient) that Unreachable names; one cut short by its caller's context
// (a cancelled pass, a fenced request out of time) is not, and a refused
// one keeps its own error.
func TestBoundedDialTellsItsOwnTimeout(t *testing.T) {
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}
	// The dialer's socket deadline (the one it took from the context)
	// passing before the context's own timer fires.
	socketDeadline := func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	const limit = 20 * time.Millisecond
	for _, tc := range []struct {
		name      string
		dial      func(ctx context.Context, network, addr string) (net.Conn, error)
		ctx       func() (context.Context, context.CancelFunc)
		ownBound  bool
		unreached string
	}{
		{"nothing answers", hang, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			true, "no answer to a connection within 20ms"},
		{"the socket's deadline first", socketDeadline, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			true, "no answer to a connection within 20ms"},
		{"the caller cancels", hang, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false, ""},
		{"the caller's deadline first", hang, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			_, err := boundedDial(tc.dial, limit)(ctx, "tcp", "192.0.2.1:443")
			require.Error(t, err)
			var dt *DialTimeoutError
			require.Equal(t, tc.ownBound, errors.As(err, &dt), "%v", err)
			// As the HTTP client hands it to a backend.
			wrapped := &url.Error{Op: "Get", URL: "http://192.0.2.1:443/b", Err: err}
			host, why := Unreachable(wrapped)
			require.Equal(t, tc.unreached, why)
			if tc.ownBound {
				require.Equal(t, "http://192.0.2.1:443", host)
				var ne net.Error
				require.True(t, errors.As(wrapped, &ne) && ne.Timeout(), "a timeout: every backend retries it")
			}
		})
	}
}

// TestBoundedDialPassesAConnectThrough: a connect that answers in time is
// the dialer's own, whatever the bound.
func TestBoundedDialPassesAConnectThrough(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var d net.Dialer
	c, err := boundedDial(d.DialContext, DialTimeout)(context.Background(), "tcp", l.Addr().String())
	require.NoError(t, err)
	require.NoError(t, c.Close())
}
