package lifecycle

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// backend opens a fresh, empty store for one test.
type backend struct {
	name string
	open func(t *testing.T) objstore.Store
}

// forEachBackend runs fn against every backend (see backends_test.go).
func forEachBackend(t *testing.T, fn func(t *testing.T, s objstore.Store)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clock is a settable clock shared by a namespace and its lease.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func newNS(t *testing.T, s objstore.Store, c *clock) *Namespace {
	t.Helper()
	ns, err := New(s, Options{Now: c.Now, Logger: quiet(), SpillDir: t.TempDir(), Owner: "test"})
	require.NoError(t, err)
	return ns
}

// lanceTable writes a table in Lance's directory layout with n data files
// (at least the fixed files below) and returns its object count.
func lanceTable(t *testing.T, s objstore.Store, name string, n int) int {
	t.Helper()
	ctx := context.Background()
	keys := []string{
		"_versions/1.manifest", "_versions/2.manifest", "_versions/3.manifest",
		"_transactions/0-aaaa.txn", "_transactions/1-bbbb.txn",
		"_deletions/0-1-0.arrow", "_indices/0c2f3e9a-1111-2222-3333-444455556666/index.idx",
	}
	for i := 0; i < n; i++ {
		keys = append(keys, fmt.Sprintf("data/%06d-0a1b.lance", i))
	}
	for _, k := range keys {
		_, err := s.Put(ctx, TableDir(name)+k, []byte("payload of "+k))
		require.NoError(t, err)
	}
	return len(keys)
}

// snapshot maps every key in the store to its ETag.
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
