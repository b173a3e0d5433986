package objstoretest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ClosedAddr is a loopback host:port nothing listens on: an endpoint that
// refuses connections, as a wrong one does.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
