package worker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

// requestLog records where every request of a pass went: on HTTP stores
// each request sent (the store's clock probe included), on the local store
// each call that reads or writes the disk (its clock is free).
type requestLog struct {
	mu      sync.Mutex
	targets []string
}

func (l *requestLog) add(target string) {
	l.mu.Lock()
	l.targets = append(l.targets, target)
	l.mu.Unlock()
}

// count is how many requests touched the keys under dir ("tenants/a/").
func (l *requestLog) count(dir string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, t := range l.targets {
		if strings.Contains(t, "/"+dir) {
			n++
		}
	}
	return n
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.add(req.URL.Path + "/" + req.URL.Query().Get("prefix"))
	return http.DefaultTransport.RoundTrip(req)
}

// loggedStore records each call of a local store as its URI and key.
type loggedStore struct {
	objstore.Store
	log *requestLog
}

func (s loggedStore) at(key string) { s.log.add(s.URI() + "/" + key) }

func (s loggedStore) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	s.at(prefix)
	return s.Store.List(ctx, prefix, fn)
}

func (s loggedStore) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	s.at(prefix)
	return s.Store.Walk(ctx, prefix, fn)
}

func (s loggedStore) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	s.at(key)
	return s.Store.Get(ctx, key, limit)
}

func (s loggedStore) Head(ctx context.Context, key string) (objstore.Object, error) {
	s.at(key)
	return s.Store.Head(ctx, key)
}

func (s loggedStore) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	s.at(key)
	return s.Store.Put(ctx, key, body)
}

func (s loggedStore) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	s.at(key)
	return s.Store.PutIfAbsent(ctx, key, body)
}

func (s loggedStore) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	s.at(key)
	return s.Store.PutIfMatch(ctx, key, body, etag)
}

func (s loggedStore) Delete(ctx context.Context, key string) error {
	s.at(key)
	return s.Store.Delete(ctx, key)
}

func (s loggedStore) DeleteIfMatch(ctx context.Context, key string, etag string) error {
	s.at(key)
	return s.Store.DeleteIfMatch(ctx, key, etag)
}

func (s loggedStore) DeleteBatch(ctx context.Context, keys []string) error {
	for _, k := range keys {
		s.at(k)
	}
	return s.Store.DeleteBatch(ctx, keys)
}

var _ objstore.Store = loggedStore{}

// A discovered root costs what a configured one does: discovery's listing
// of it is the plan's, so a root with nothing due costs 3 requests per pass
// (the PAUSE switch's listing, the HEAD of _reaper that could hide it, and
// the root's listing), and one with a due table no more than the same root
// configured.
func TestDiscoveredRootCostsWhatAConfiguredOneDoes(t *testing.T) {
	cases := []struct {
		name string
		due  bool
		want int // requests per root; 0: only equal to the configured root
	}{
		{name: "nothing due", want: 3},
		{name: "one due table", due: true},
	}
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := b.NewRoot(t)
				ctx := t.Context()
				setup := r.Open(t)
				for _, dir := range []string{"tenants/a/", "configured/b/"} {
					lancetest.Small(1).Put(t, setup, dir+lifecycle.TableDir("live"))
					if tc.due {
						lancetest.Small(2).Put(t, setup, dir+lifecycle.TableDir("old"))
						_, err := setup.Put(ctx, dir+lifecycle.MarkerKey("old"), lifecycle.EncodeMarker(time.Now(), day))
						require.NoError(t, err)
					}
				}
				clock := objstoretest.NewClock()
				clock.Advance(2 * day)
				log := &requestLog{}
				so := stack.Options{Transport: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
				so.WrapBackend = func(s objstore.Store) objstore.Store {
					if b.Name == objstoretest.Local.Name {
						s = loggedStore{Store: s, log: log}
					}
					return clock.Wrap(s)
				}
				cfg := baseConfig()
				cfg.Roots = []config.Root{{URI: r.Sub("configured/b"), StorageOptions: r.Options}}
				cfg.Discover = []config.Root{{URI: r.Sub("tenants/*/"), StorageOptions: r.Options}}
				require.NoError(t, cfg.ValidateForPass())
				w := &Worker{
					Config: cfg,
					Open: func(ctx context.Context, root roots.Root) (objstore.Store, error) {
						return stack.Open(ctx, root.URI, root.StorageOptions, so)
					},
					Roots: func(ctx context.Context) ([]roots.Root, error) {
						return roots.Expand(ctx, cfg, func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
							return stack.Open(ctx, uri, opts, so)
						})
					},
					Logger: so.Logger,
					Owner:  "test/1",
				}
				rep, err := w.Pass(ctx, nil)
				require.NoError(t, err)
				require.Len(t, rep.Roots, 2)
				for _, rr := range rep.Roots {
					require.NoError(t, rr.Err, rr.Root)
					want := map[string]string{} // a live table gets no decision
					if tc.due {
						want["old"] = string(outcome.Purged) + "/" + string(outcome.ReasonDue)
					}
					got := map[string]string{}
					for d := range rr.All() {
						got[d.Table] = string(d.Action) + "/" + string(d.Reason)
					}
					require.Equal(t, want, got, rr.Root)
				}
				discovered, configured := log.count("tenants/a/"), log.count("configured/b/")
				t.Logf("requests per pass: discovered root %d, configured root %d", discovered, configured)
				require.Equal(t, configured, discovered, "a discovered root costs what a configured one does (got %d, want %d)", discovered, configured)
				if tc.want > 0 {
					require.Equal(t, tc.want, discovered, "requests per pass of a discovered root")
				}
			})
		}
	}, objstoretest.Local, objstoretest.S3Store)
}
