//go:build !fuzzonly

package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/clocktest"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
)

// forEachBackend runs fn against every backend (objstoretest.Backends:
// memory, the local filesystem, a real S3 server and the GCS and Azure
// emulators), each wrapped in an
// objstoretest.ClockStore so that a test clock (newNS) moves the store's
// clock along with the host's.
func forEachBackend(t *testing.T, fn func(t *testing.T, s objstore.Store)) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		t.Parallel() // each on its own root; mostly waiting on a test server
		fn(t, objstoretest.NewClockStore(retrying(t, b.NewRoot(t))))
	})
}

// retrying opens r behind the retry layer, classified by its backend as in
// production (internal/stack, which this package cannot import):
// an emulator under CI load answers a request late or with a 503, and a
// bare store would fail the purge where reaper retries. Faults a test
// injects wrap the returned store, above the retries.
func retrying(t *testing.T, r objstoretest.Root) objstore.Store {
	s := r.Open(t)
	if r.Backend == objstoretest.Memory.Name {
		return s
	}
	_, b, err := all.Default().Resolve(r.URI)
	require.NoError(t, err)
	o := retry.Options{IsTransient: b.IsTransient, IsThrottle: b.IsThrottle}
	if o.IsTransient == nil {
		o.IsTransient = retry.NeverTransient
	}
	return retry.Wrap(s, o)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clock is time passing for a test: Advance moves the host's clock, the
// lease holders' clock and, when the namespace's store is a ClockStore, the
// store's clock, all together, as real time does.
type clock struct {
	clocktest.Offset
	mu     sync.Mutex
	stores []*objstoretest.ClockStore
}

func (c *clock) Advance(d time.Duration) {
	c.Offset.Advance(d)
	c.mu.Lock()
	stores := c.stores
	c.mu.Unlock()
	for _, s := range stores {
		s.Advance(d)
	}
}

func (c *clock) attach(s objstore.Store) {
	cs, ok := s.(*objstoretest.ClockStore)
	for !ok {
		u, wraps := s.(interface{ Unwrap() objstore.Store })
		if !wraps {
			return
		}
		s = u.Unwrap()
		cs, ok = s.(*objstoretest.ClockStore)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, have := range c.stores {
		if have == cs {
			return
		}
	}
	c.stores = append(c.stores, cs)
}

// clockMemory is a memory store whose clock a test clock moves.
func clockMemory() *objstoretest.ClockStore { return objstoretest.NewClockStore(memstore.New()) }

// newNS opens a namespace whose host and lease clocks are c (and whose
// store's clock c moves, see clock).
func newNS(t *testing.T, s objstore.Store, c *clock) *Namespace {
	t.Helper()
	return newNSBatch(t, s, c, 0)
}

// testBatch is the delete batch of the tests that need a purge of several
// batches: a table of a few hundred objects then has the shape of one of
// a few thousand under the stores' 1,000, at a tenth of the requests (the
// emulators under -race made those tables most of this package's time).
const testBatch = 100

// newNSBatch is newNS with delete batches of batch keys (0: the stores'
// limit, as in production).
func newNSBatch(t *testing.T, s objstore.Store, c *clock, batch int) *Namespace {
	t.Helper()
	c.attach(s)
	ns, err := New(s, Options{Now: c.Now, LeaseClock: c.Now, Logger: quiet(), SpillDir: t.TempDir(), Owner: "test", DeleteBatch: batch})
	require.NoError(t, err)
	return ns
}

// lanceTable writes a table in Lance's directory layout with n data files
// and the fixed files of lancetest.Full, and returns its object count.
func lanceTable(t *testing.T, s objstore.Store, name string, n int) int {
	t.Helper()
	return lancetest.Full(n).Put(t, s, TableDir(name))
}

// snapshot maps every key in the store to its ETag.
// tableBytes is the size of every object of table name, as its walk counts it.
func tableBytes(t *testing.T, s objstore.Store, name string) int64 {
	t.Helper()
	var size int64
	require.NoError(t, s.Walk(context.Background(), TableDir(name), func(objs []objstore.Object) error {
		for _, o := range objs {
			size += o.Size
		}
		return nil
	}))
	return size
}

func snapshot(t *testing.T, s objstore.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.Walk(context.Background(), "", func(objs []objstore.Object) error {
		for _, o := range objs {
			out[o.Key] = o.ETag
		}
		return nil
	}))
	return out
}

// keysUnder lists the keys with prefix in the snapshot, sorted.
func keysUnder(snap map[string]string, prefix string) []string {
	var ks []string
	for k := range snap {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

func statusOf(t *testing.T, ns *Namespace, name string) TableStatus {
	t.Helper()
	st, err := ns.Status(context.Background(), name)
	require.NoError(t, err)
	require.Len(t, st, 1)
	return st[0]
}
