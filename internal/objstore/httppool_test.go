package objstore_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// The HTTP backends' pool keeps enough idle connections for a pass at full
// concurrency (4 tables x 16 batches), where Go's default keeps two per host
// and a purge re-dialled (and re-handshook) nearly every request; the rest
// of http.DefaultTransport (proxy from the environment, timeouts) is kept.
func TestHTTPTransportPoolsForReapersConcurrency(t *testing.T) {
	tr := objstore.NewHTTPTransport()
	require.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 4*16)
	require.GreaterOrEqual(t, tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	def := http.DefaultTransport.(*http.Transport)
	require.NotNil(t, tr.Proxy, "proxy from the environment, as the default")
	require.Equal(t, def.IdleConnTimeout, tr.IdleConnTimeout)
	require.Equal(t, def.TLSHandshakeTimeout, tr.TLSHandshakeTimeout)
	require.Equal(t, 2, http.DefaultMaxIdleConnsPerHost, "the default this replaces")
	require.NotSame(t, def, tr, "a clone: the process-wide default is left alone")
}
