package daemon

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/roots"
)

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "reaper_test_total", Help: "test"})
	reg.MustRegister(c)
	var rootsErr error
	ready := &Readiness{
		Roots: func(context.Context) ([]roots.Root, error) { return []roots.Root{{URI: "a"}}, rootsErr },
		Open:  func(context.Context, roots.Root) (objstore.Store, error) { return memstore.New(), nil },
		TTL:   -1, // probe every time
	}
	srv := httptest.NewServer(Handler(reg, ready))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, path string
		rootsErr   error
		code       int
		body       string
	}{
		{"alive", "/healthz", nil, http.StatusOK, "ok\n"},
		{"alive while not ready", "/healthz", errors.New("down"), http.StatusOK, "ok\n"},
		{"ready", "/readyz", nil, http.StatusOK, "ready\n"},
		{"not ready", "/readyz", errors.New("down"), http.StatusServiceUnavailable, "not ready: down\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rootsErr = tc.rootsErr
			code, body := get(tc.path)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.body, body)
		})
	}
	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "reaper_test_total 0")
}
