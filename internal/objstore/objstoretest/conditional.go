package objstoretest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var conditionalClauses = []clause{
	{"PutIfAbsentCreates", testPutIfAbsentCreates},
	{"PutIfAbsentExisting", testPutIfAbsentExisting},
	{"PutIfAbsentConcurrent", testPutIfAbsentConcurrent},
	{"PutIfMatchCurrent", testPutIfMatchCurrent},
	{"PutIfMatchStale", testPutIfMatchStale},
	{"PutIfMatchMissing", testPutIfMatchMissing},
	{"PutIfMatchConcurrent", testPutIfMatchConcurrent},
}

func testPutIfAbsentCreates(t *testing.T, s objstore.Store, _ config) {
	obj, err := s.PutIfAbsent(t.Context(), "lease/a", []byte("mine"))
	require.NoError(t, err, "put if absent on a missing key")
	require.NotEmpty(t, obj.ETag, "put if absent ETag")
	require.Equal(t, int64(4), obj.Size, "put if absent size")
	got := requireBody(t, s, "lease/a", "mine")
	require.Equal(t, obj.ETag, got.ETag, "get ETag: got/want (put if absent)")
}

func testPutIfAbsentExisting(t *testing.T, s objstore.Store, _ config) {
	orig := put(t, s, "lease", "first")
	_, err := s.PutIfAbsent(t.Context(), "lease", []byte("second"))
	require.ErrorIs(t, err, objstore.ErrPrecondition, "put if absent on existing key: got %v, want ErrPrecondition", err)
	got := requireBody(t, s, "lease", "first")
	require.Equal(t, orig.ETag, got.ETag, "ETag after losing put if absent: got/want")
}

// race runs n callers of op at once and returns the indexes of the winners;
// every loser must fail with ErrPrecondition.
func race(t *testing.T, n int, op func(i int) error) []int {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
		others  []error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			err := op(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, i)
			case !errors.Is(err, objstore.ErrPrecondition):
				others = append(others, err)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, others, "losers must fail with ErrPrecondition")
	return winners
}

func testPutIfAbsentConcurrent(t *testing.T, s objstore.Store, cfg config) {
	winners := race(t, cfg.racers, func(i int) error {
		_, err := s.PutIfAbsent(t.Context(), "race/lease", []byte(fmt.Sprint("racer-", i)))
		return err
	})
	require.Len(t, winners, 1, "winners of %d concurrent put if absent: got %v, want exactly one", cfg.racers, winners)
	requireBody(t, s, "race/lease", fmt.Sprint("racer-", winners[0]))
}

func testPutIfMatchCurrent(t *testing.T, s objstore.Store, _ config) {
	orig := put(t, s, "cas", "v1")
	obj, err := s.PutIfMatch(t.Context(), "cas", []byte("v2-longer"), orig.ETag)
	require.NoError(t, err, "put if match with the current ETag")
	require.NotEmpty(t, obj.ETag, "put if match ETag")
	require.NotEqual(t, orig.ETag, obj.ETag, "ETag after put if match")
	require.Equal(t, int64(len("v2-longer")), obj.Size, "put if match size")
	got := requireBody(t, s, "cas", "v2-longer")
	require.Equal(t, obj.ETag, got.ETag, "get ETag: got/want (put if match)")

	// The returned ETag is usable for the next swap.
	_, err = s.PutIfMatch(t.Context(), "cas", []byte("v3"), obj.ETag)
	require.NoError(t, err, "put if match with the ETag returned by the previous swap")
	requireBody(t, s, "cas", "v3")
}

func testPutIfMatchStale(t *testing.T, s objstore.Store, _ config) {
	stale := put(t, s, "cas", "v1")
	cur := put(t, s, "cas", "v2")
	for _, etag := range []string{stale.ETag, "not-an-etag", cur.ETag + "x"} {
		_, err := s.PutIfMatch(t.Context(), "cas", []byte("v3"), etag)
		require.ErrorIs(t, err, objstore.ErrPrecondition, "put if match with ETag %q: got %v, want ErrPrecondition", etag, err)
	}
	got := requireBody(t, s, "cas", "v2")
	require.Equal(t, cur.ETag, got.ETag, "ETag after losing put if match: got/want")
}

func testPutIfMatchMissing(t *testing.T, s objstore.Store, _ config) {
	old := put(t, s, "cas", "v1")
	require.NoError(t, s.Delete(t.Context(), "cas"), "delete")
	for _, key := range []string{"cas", "never/written"} {
		_, err := s.PutIfMatch(t.Context(), key, []byte("v2"), old.ETag)
		require.ErrorIs(t, err, objstore.ErrNotFound, "put if match on missing %s: got %v, want ErrNotFound", key, err)
		requireMissing(t, s, key)
	}
}

func testPutIfMatchConcurrent(t *testing.T, s objstore.Store, cfg config) {
	orig := put(t, s, "race/cas", "v0")
	winners := race(t, cfg.racers, func(i int) error {
		_, err := s.PutIfMatch(t.Context(), "race/cas", []byte(fmt.Sprint("racer-", i)), orig.ETag)
		return err
	})
	require.Len(t, winners, 1, "winners of %d concurrent put if match: got %v, want exactly one", cfg.racers, winners)
	requireBody(t, s, "race/cas", fmt.Sprint("racer-", winners[0]))
}
