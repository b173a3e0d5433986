//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// durabilityLog wraps a store and records, in order, each delete batch and
// when the durability work that batch deferred ran: what a local disk's
// directory fsyncs would be.
type durabilityLog struct {
	objstore.Store
	mu     sync.Mutex
	events []string
	n      int
}

func (s *durabilityLog) Unwrap() objstore.Store { return s.Store }

func (s *durabilityLog) record(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *durabilityLog) DeleteBatch(ctx context.Context, keys []string) error {
	s.mu.Lock()
	s.n++
	id := s.n
	s.mu.Unlock()
	kind := "rest"
	if strings.Contains(keys[0], "/_versions/") {
		kind = "manifests"
	}
	s.record(fmt.Sprintf("delete %s %d", kind, id))
	b := objstore.SyncBatchFrom(ctx)
	if b == nil {
		s.record(fmt.Sprintf("synced %d inline", id))
	} else {
		b.Defer(kind, func() error { s.record("flushed " + kind); return nil })
	}
	return s.Store.DeleteBatch(ctx, keys)
}

func (s *durabilityLog) DeleteIfMatch(ctx context.Context, key, etag string) error {
	if key == MarkerKey("t") {
		s.record("delete marker")
	}
	return s.Store.DeleteIfMatch(ctx, key, etag)
}

// A purge makes its removals durable once per phase: every manifest batch
// is flushed before the first batch of the rest is sent, and the rest
// before the marker goes. Nothing is synced per batch.
func TestPurgeFlushesOncePerPhase(t *testing.T) {
	s := &durabilityLog{Store: clockMemory()}
	c := &clock{}
	ns := newNS(t, s, c)
	ctx := context.Background()
	lanceTable(t, s, "t", 3500)
	for i := 4; i <= 1200; i++ { // more than one batch of manifests
		_, err := s.Put(ctx, fmt.Sprintf("t.lance/_versions/%d.manifest", i), []byte("m"))
		require.NoError(t, err)
	}
	_, err := ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)
	res, err := ns.Purge(ctx, "t", PurgeOptions{DeleteConcurrency: 3})
	require.NoError(t, err)
	require.Equal(t, OutcomePurged, res.Outcome)

	var order []string
	for _, e := range s.events {
		order = append(order, strings.TrimRight(e, " 0123456789"))
	}
	// Collapse runs: the batches of a phase may go in any order.
	var phases []string
	for _, e := range order {
		if len(phases) == 0 || phases[len(phases)-1] != e {
			phases = append(phases, e)
		}
	}
	require.Equal(t, []string{
		"delete manifests", "flushed manifests",
		"delete rest", "flushed rest",
		"delete marker",
	}, phases, "events: %v", s.events)
}
