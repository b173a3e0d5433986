//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/stack"
)

// This file measures what one delete batch costs on S3 (versitygw), as
// production's store stack sends it: every HTTP request through
// metrics.RequestCounter, in order, with a mark where each DeleteBatch
// call began. A batch's requests are its DeleteObjects and what was sent
// after it until the next batch: the guard before the next batch (and, in
// a retention run's manifest phase, its re-read of the tags). BENCHMARKS.md
// ("The guard's requests per delete batch") quotes this test's log.

// opLog is the S3 operations a stack sent, in order, and a mark per batch.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

func (l *opLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = nil
}

// batchMark begins the mark of a DeleteBatch call (its phase follows).
const batchMark = "batch:"

// logTransport records each request's S3 operation before sending it.
type logTransport struct {
	log  *opLog
	next http.RoundTripper
}

func (t logTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.log.add(s3.Operation(req))
	return t.next.RoundTrip(req)
}

// markBatches marks each DeleteBatch call in the log: the manifest phase
// or the rest, by its first key.
type markBatches struct {
	objstore.Store
	log *opLog
}

func (m markBatches) Unwrap() objstore.Store { return m.Store }

func (m markBatches) DeleteBatch(ctx context.Context, keys []string) error {
	phase := "files"
	if len(keys) > 0 && strings.Contains(keys[0], "/"+versionsDir+"/") {
		phase = "manifests"
	}
	m.log.add(batchMark + phase)
	return m.Store.DeleteBatch(ctx, keys)
}

// batchCost is what the log says one batch after the first of its phase
// cost: its requests by operation.
type batchCost struct {
	phase string
	ops   map[string]int
}

func (c batchCost) total() int {
	n := 0
	for _, v := range c.ops {
		n += v
	}
	return n
}

func (c batchCost) String() string {
	names := make([]string, 0, len(c.ops))
	for k := range c.ops {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, c.ops[k])
	}
	return fmt.Sprintf("%d (%s)", c.total(), strings.Join(parts, ", "))
}

// batchCosts splits the log at its batch marks: the requests from one
// batch's mark to the next mark of the same phase are that batch's
// DeleteObjects and the reads before the next batch.
func (l *opLog) batchCosts() []batchCost {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []batchCost
	var cur *batchCost
	for _, op := range l.ops {
		if phase, ok := strings.CutPrefix(op, batchMark); ok {
			if cur != nil && cur.phase == phase {
				out = append(out, *cur)
			}
			cur = &batchCost{phase: phase, ops: map[string]int{}}
			continue
		}
		if cur != nil {
			cur.ops[op]++
		}
	}
	return out
}

// s3Stack opens a fresh S3 root through the store stack production uses,
// its requests logged and counted, behind a ClockStore the test clock
// moves.
func s3Stack(t *testing.T) (objstore.Store, *opLog, *metrics.RequestCounter) {
	t.Helper()
	root := objstoretest.S3Store.NewRoot(t)
	log := &opLog{}
	rc := metrics.NewRequestCounter(logTransport{log: log, next: objstore.NewHTTPTransport()}, nil)
	s, err := stack.Open(t.Context(), root.URI, root.Options, stack.Options{
		Transport: rc,
		WrapBackend: func(s objstore.Store) objstore.Store {
			return markBatches{Store: objstoretest.NewClockStore(s), log: log}
		},
		Logger: quiet(),
	})
	require.NoError(t, err)
	return s, log, rc
}

// requireSteadyBatches logs the batches' costs and returns the cost every
// batch of phase after the first shares.
func requireSteadyBatches(t *testing.T, what string, costs []batchCost, phase string) batchCost {
	t.Helper()
	var of []batchCost
	for _, c := range costs {
		if c.phase == phase {
			of = append(of, c)
		}
	}
	require.NotEmpty(t, of, "%s: batches of the %s phase after its first", what, phase)
	for _, c := range of {
		require.Equal(t, of[0].String(), c.String(), "%s: every %s batch costs the same", what, phase)
	}
	t.Logf("%s, %s phase: %d batches after the first, each %s", what, phase, len(of), of[0])
	return of[0]
}

// guardedBatch is what a batch of deletes costs on S3 with its guard: the
// DeleteObjects, the listing of the table's control objects, and the PAUSE
// switch's listing and HEAD (guard.go).
var guardedBatch = map[string]int{s3.OpDeleteObjects: 1, s3.OpListObjectsV2: 2, s3.OpHeadObject: 1}

// TestRequestsPerDeleteBatchS3 counts the requests of a purge's and of a
// retention run's delete batches on S3, one batch in flight at a time: a
// guard that reads more than its one listing and PAUSE fails it.
func TestRequestsPerDeleteBatchS3(t *testing.T) {
	t.Run("purge", func(t *testing.T) {
		ctx := context.Background()
		s, log, rc := s3Stack(t)
		c := &clock{}
		ns := newNSBatch(t, s, c, 10)
		lanceTable(t, s, "t", 60)
		_, err := ns.Drop(ctx, "t", time.Second)
		require.NoError(t, err)
		c.Advance(2 * time.Second)
		log.reset()
		rc.Reset()
		res, err := ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
		t.Logf("purge of %d objects in batches of 10: %d requests in all: %v", res.Objects, rc.Total(), rc.Counts())
		require.Equal(t, guardedBatch, requireSteadyBatches(t, "purge", log.batchCosts(), "files").ops)
	})
	t.Run("retain", func(t *testing.T) {
		ctx := context.Background()
		s, log, rc := s3Stack(t)
		ns := newNSBatch(t, s, &clock{}, 1)
		putLanceFixture(t, s, "t")
		policy := fixturePolicy(t, s, "t")
		log.reset()
		rc.Reset()
		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: policy})
		require.NoError(t, err)
		require.Equal(t, RetainCleaned, res.Outcome)
		t.Logf("retention removing %d versions, %d objects in batches of 1: %d requests in all: %v", res.VersionsRemoved, res.Objects, rc.Total(), rc.Counts())
		costs := log.batchCosts()
		// A manifest batch also reads the tags again (untaggedManifests).
		requireSteadyBatches(t, "retain", costs, "manifests")
		require.Equal(t, guardedBatch, requireSteadyBatches(t, "retain", costs, "files").ops)
	})
}
