package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
	"github.com/lance-reaper/reaper/internal/worker"
)

// listFails fails every List.
type listFails struct {
	objstore.Store
	err error
}

func (l listFails) List(context.Context, string, func(objstore.Page) error) error { return l.err }

// probes is a Readiness over named roots whose stores the test chooses,
// counting how often the roots are listed.
type probes struct {
	stores   map[string]objstore.Store
	rootsErr error
	openErr  error
	listed   int
	now      time.Time
}

func (p *probes) readiness() *Readiness {
	return &Readiness{
		Roots: func(context.Context) ([]roots.Root, error) {
			p.listed++
			var rs []roots.Root
			for _, u := range []string{"a", "b"} {
				if _, ok := p.stores[u]; ok {
					rs = append(rs, roots.Root{URI: u})
				}
			}
			return rs, p.rootsErr
		},
		Open: func(_ context.Context, r roots.Root) (objstore.Store, error) {
			if p.openErr != nil {
				return nil, p.openErr
			}
			return p.stores[r.URI], nil
		},
		TTL: time.Minute,
		Now: func() time.Time { return p.now },
	}
}

func TestReadinessProbe(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		p       *probes
		wantErr string
	}{
		{"every root readable", &probes{stores: map[string]objstore.Store{"a": memstore.New(), "b": memstore.New()}}, ""},
		{"a PAUSE is still ready", &probes{stores: map[string]objstore.Store{"a": paused(t)}}, ""},
		{"roots cannot be listed", &probes{stores: map[string]objstore.Store{"a": memstore.New()}, rootsErr: boom}, "boom"},
		{"a root cannot be opened", &probes{stores: map[string]objstore.Store{"a": memstore.New()}, openErr: boom}, "root a: boom"},
		{"a root cannot be read", &probes{stores: map[string]objstore.Store{"a": memstore.New(), "b": listFails{memstore.New(), boom}}}, "root b: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.readiness().Check(context.Background())
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

func paused(t *testing.T) objstore.Store {
	s := memstore.New()
	_, err := s.Put(context.Background(), worker.PauseKey, []byte("maintenance"))
	require.NoError(t, err)
	return s
}

// Answers are cached for TTL; a pass that reached every root refreshes
// the cache as ready, one that did not leaves it.
func TestReadinessCache(t *testing.T) {
	p := &probes{stores: map[string]objstore.Store{"a": listFails{memstore.New(), errors.New("down")}}, now: time.Unix(1000, 0)}
	r := p.readiness()
	ctx := context.Background()
	require.Error(t, r.Check(ctx))
	require.Error(t, r.Check(ctx))
	require.Equal(t, 1, p.listed, "cached within the TTL")

	r.PassFinished(&worker.Report{Roots: []*worker.RootReport{{Root: "a", Err: errors.New("open")}}})
	require.Error(t, r.Check(ctx), "a pass with a failed root proves nothing")

	r.PassFinished(&worker.Report{Roots: []*worker.RootReport{{Root: "a"}}})
	require.NoError(t, r.Check(ctx), "a pass that reached every root")
	require.Equal(t, 1, p.listed)

	p.now = p.now.Add(time.Minute)
	require.Error(t, r.Check(ctx), "probed again after the TTL")
	require.Equal(t, 2, p.listed)
}

// A local root moved away (or unmounted) makes the next probe after
// ReadyTTL say 503: each probe opens the root again, and opening a local
// root checks its directory.
func TestReadinessSeesAMovedRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	require.NoError(t, os.Mkdir(dir, 0o755))
	now := time.Unix(1000, 0)
	ready := &Readiness{
		Roots: func(context.Context) ([]roots.Root, error) { return []roots.Root{{URI: dir}}, nil },
		Open:  func(_ context.Context, r roots.Root) (objstore.Store, error) { return local.Open(r.URI) },
		Now:   func() time.Time { return now },
	}
	h := Handler(prometheus.NewRegistry(), ready)
	probe := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := probe()
	require.Equal(t, http.StatusOK, code, body)

	require.NoError(t, os.Rename(dir, dir+".moved"))
	code, body = probe()
	require.Equal(t, http.StatusOK, code, "within ReadyTTL the answer is reused: %s", body)
	now = now.Add(ReadyTTL)
	code, body = probe()
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "directory does not exist")

	require.NoError(t, os.Rename(dir+".moved", dir))
	now = now.Add(ReadyTTL)
	code, body = probe()
	require.Equal(t, http.StatusOK, code, "ready again once the root is back: %s", body)
}

// hangs is a store whose List answers only once every store sharing
// arrived has been asked (so the roots must be checked at once), or never
// when arrived is nil.
type hangs struct {
	objstore.Store
	mu      *sync.Mutex
	waiting *int
	arrived chan struct{}
	n       int
}

func (h hangs) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if h.arrived != nil {
		h.mu.Lock()
		if *h.waiting++; *h.waiting == h.n {
			close(h.arrived)
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
			return h.Store.List(ctx, prefix, fn)
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// A probe ends within its bounds: a root that never answers is not ready
// after RootTimeout and names itself, and the roots are checked at once, so
// one slow root does not hold the others back.
func TestReadinessIsBounded(t *testing.T) {
	t.Run("a root that never answers", func(t *testing.T) {
		p := &probes{stores: map[string]objstore.Store{"a": memstore.New(), "b": hangs{Store: memstore.New()}}}
		r := p.readiness()
		r.RootTimeout = 20 * time.Millisecond
		err := r.Check(context.Background())
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "root b:")
		require.NotContains(t, err.Error(), "root a:")
	})
	t.Run("roots are checked at once", func(t *testing.T) {
		const n = 5
		var mu sync.Mutex
		var waiting int
		arrived := make(chan struct{})
		stores := map[string]objstore.Store{}
		var rs []roots.Root
		for i := range n {
			uri := fmt.Sprintf("r%d", i)
			stores[uri] = hangs{Store: memstore.New(), mu: &mu, waiting: &waiting, arrived: arrived, n: n}
			rs = append(rs, roots.Root{URI: uri})
		}
		r := &Readiness{
			Roots:       func(context.Context) ([]roots.Root, error) { return rs, nil },
			Open:        func(_ context.Context, root roots.Root) (objstore.Store, error) { return stores[root.URI], nil },
			Concurrency: n,
		}
		require.NoError(t, r.Check(context.Background()))
	})
}

// TestReadinessOnBucketStores: on S3, GCS and Azure (real servers, the
// production stack), a root whose bucket or container does not exist is not
// ready and the answer names it, while an empty prefix of an existing bucket
// (a database with no tables yet) is ready. S3 and GCS answer a HEAD in a
// missing bucket with the same 404 as a missing key, so the HEAD of the
// PAUSE key this probe once made said ready.
func TestReadinessOnBucketStores(t *testing.T) {
	type server struct {
		uri  func(bucket string) string
		name string
		opts map[string]string
	}
	for _, b := range []struct {
		backend string
		start   func(t *testing.T) server
		missing string
	}{
		{"s3", func(t *testing.T) server {
			s := objstoretest.S3(t)
			return server{func(b string) string { return "s3://" + b + "/tenant/db" }, s.Bucket, s.Options()}
		}, "bucket does not exist"},
		{"gcs", func(t *testing.T) server {
			s := objstoretest.GCS(t)
			return server{func(b string) string { return "gs://" + b + "/tenant/db" }, s.Bucket, s.Options()}
		}, "bucket"},
		{"azure", func(t *testing.T) server {
			s := objstoretest.Azure(t)
			return server{func(b string) string { return "az://" + b + "/tenant/db" }, s.Container, s.Options()}
		}, "ContainerNotFound"},
	} {
		t.Run(b.backend, func(t *testing.T) {
			srv := b.start(t)
			for _, tc := range []struct {
				name, bucket, wantErr string
			}{
				{"an empty prefix of an existing bucket", srv.name, ""},
				{"a missing bucket", srv.name + "-gone", b.missing},
			} {
				t.Run(tc.name, func(t *testing.T) {
					uri := srv.uri(tc.bucket)
					r := &Readiness{
						Roots: func(context.Context) ([]roots.Root, error) { return []roots.Root{{URI: uri}}, nil },
						Open: func(ctx context.Context, root roots.Root) (objstore.Store, error) {
							return stack.Open(ctx, root.URI, srv.opts, stack.Options{})
						},
					}
					err := r.Check(t.Context())
					if tc.wantErr == "" {
						require.NoError(t, err)
						return
					}
					require.Error(t, err)
					require.ErrorContains(t, err, "root "+uri+":")
					require.ErrorContains(t, err, tc.wantErr)
				})
			}
		})
	}
}
