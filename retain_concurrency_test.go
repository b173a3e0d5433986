package reaper_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/stack"
)

// overlapBatches records how many batch deletes are in flight at once. The
// first full batch (more follow it) waits, for a bound at most, for a
// second to start beside it, so a caller that sends one batch at a time
// shows as a maximum of 1 and one that sends several shows 2.
type overlapBatches struct {
	objstore.Store
	mu       sync.Mutex
	inflight int
	most     int
	held     bool // the first full batch was held
	second   chan struct{}
	// seen: a second batch was in flight beside another (second closed):
	// the count may reach 2 again later, and second is closed once.
	seen bool
}

func (o *overlapBatches) DeleteBatch(ctx context.Context, keys []string) error {
	o.mu.Lock()
	o.inflight++
	o.most = max(o.most, o.inflight)
	first := len(keys) == objstore.MaxBatchDelete && !o.held
	o.held = o.held || first
	if o.inflight == 2 && !o.seen {
		o.seen = true
		close(o.second)
	}
	o.mu.Unlock()
	if first {
		select {
		case <-o.second:
		case <-time.After(5 * time.Second): // a bound on failure, not a synchronization
		}
	}
	err := o.Store.DeleteBatch(ctx, keys)
	o.mu.Lock()
	o.inflight--
	o.mu.Unlock()
	return err
}

// Retain deletes with the adaptive concurrency a purge has (the CLI's
// limits.delete_concurrency to start), not one batch at a time: a table of
// 20,000 files is 20 batches, and one at a time on S3 is a round trip each
// (the retention bench's first figures).
func TestRetainSendsBatchesConcurrently(t *testing.T) {
	root := t.TempDir()
	src := "internal/lance/testdata/lancedb-0.39/t.lance"
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(rel, "tree") || strings.HasPrefix(rel, filepath.Join("_refs", "branches")) {
			return nil // the branch names the table's original location
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, "events.lance", rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		return os.WriteFile(dst, body, 0o644)
	}))
	// 2,500 files of an index no manifest names: with DeleteUnverified
	// they go (_indices/ is listed whole, whatever the files' age), three
	// batches of up to 1,000 in one phase.
	for i := range 2500 {
		dst := filepath.Join(root, "events.lance", "_indices", "00000000-0000-0000-0000-00000000abcd", fmt.Sprintf("part-%04d.idx", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, []byte("orphan"), 0o644))
	}
	st, err := local.Open(root)
	require.NoError(t, err)
	tb, err := lance.ReadTable(t.Context(), st, "events.lance/")
	require.NoError(t, err)

	o := &overlapBatches{second: make(chan struct{})}
	ctx := stack.WithWrapBackend(t.Context(), func(s objstore.Store) objstore.Store { o.Store = s; return o })
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	require.NoError(t, err)
	res, err := ns.Retain(t.Context(), "events", reaper.RetainOptions{Policy: reaper.RetentionPolicy{
		Before: tb.Versions[4].Timestamp.Add(-time.Millisecond), DeleteUnverified: true}})
	require.NoError(t, err)
	require.Equal(t, reaper.RetainCleaned, res.Outcome)
	require.GreaterOrEqual(t, res.Objects, int64(2500))
	require.GreaterOrEqual(t, o.most, 2, "Retain sent its delete batches one at a time")
}
