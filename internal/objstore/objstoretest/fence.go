package objstoretest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

var fenceClauses = []clause{
	{"FenceRefusesEveryMutation", testFenceRefuses},
	{"FenceAllowsAndIsAsked", testFenceAllows},
	{"NowIsTheStoresClock", testNow},
	{"PruneEmptyLeavesObjects", testPruneEmptyLeavesObjects},
}

// Fence is a test fence: it allows Allowed calls (negative: unlimited),
// then refuses with ErrRefused. Calls counts every question.
type Fence struct {
	Allowed int64
	Limit   time.Duration
	calls   atomic.Int64
}

// ErrRefused is what a Fence refuses with.
var ErrRefused = errors.New("test fence refused")

// Allow implements objstore.Fence.
func (f *Fence) Allow() (time.Duration, error) {
	n := f.calls.Add(1)
	if f.Allowed >= 0 && n > f.Allowed {
		return 0, ErrRefused
	}
	return f.Limit, nil
}

// Calls is how often the fence was asked.
func (f *Fence) Calls() int64 { return f.calls.Load() }

func testFenceRefuses(t *testing.T, s objstore.Store, _ config) {
	before := put(t, s, "t/a", "a")
	put(t, s, "t/b", "b")
	f := &Fence{Allowed: 0}
	ctx := objstore.WithFence(t.Context(), f)
	mutations := map[string]func() error{
		"put":             func() error { _, err := s.Put(ctx, "t/a", []byte("x")); return err },
		"put if absent":   func() error { _, err := s.PutIfAbsent(ctx, "t/new", []byte("x")); return err },
		"put if match":    func() error { _, err := s.PutIfMatch(ctx, "t/a", []byte("x"), before.ETag); return err },
		"delete":          func() error { return s.Delete(ctx, "t/a") },
		"delete if match": func() error { return s.DeleteIfMatch(ctx, "t/a", before.ETag) },
		"delete batch":    func() error { return s.DeleteBatch(ctx, []string{"t/a", "t/b"}) },
		"prune empty":     func() error { return s.PruneEmpty(ctx, "t/") },
	}
	for name, fn := range mutations {
		err := fn()
		require.ErrorIs(t, err, objstore.ErrFenced, "%s under a refusing fence: got %v, want ErrFenced", name, err)
		require.ErrorIs(t, err, ErrRefused, "%s: the fence's own error must be in the chain", name)
	}
	require.GreaterOrEqual(t, f.Calls(), int64(len(mutations)), "every mutation asks the fence")
	got := requireBody(t, s, "t/a", "a")
	require.Equal(t, before.ETag, got.ETag, "t/a unchanged under a refusing fence")
	requireBody(t, s, "t/b", "b")
	requireMissing(t, s, "t/new")
	// Reads are never fenced.
	_, _, err := s.Get(ctx, "t/a", 1<<20)
	require.NoError(t, err, "get under a refusing fence")
	_, err = s.Head(ctx, "t/a")
	require.NoError(t, err, "head under a refusing fence")
	walkAll(t, s, "t/")
}

func testFenceAllows(t *testing.T, s objstore.Store, _ config) {
	f := &Fence{Allowed: -1, Limit: time.Minute}
	ctx := objstore.WithFence(t.Context(), f)
	obj, err := s.PutIfAbsent(ctx, "t/a", []byte("a"))
	require.NoError(t, err, "put if absent under an allowing fence")
	_, err = s.PutIfMatch(ctx, "t/a", []byte("b"), obj.ETag)
	require.NoError(t, err, "put if match under an allowing fence")
	put(t, s, "t/c", "c")
	require.NoError(t, s.DeleteBatch(ctx, []string{"t/a", "t/c"}), "delete batch under an allowing fence")
	requireMissing(t, s, "t/a")
	requireMissing(t, s, "t/c")
	require.GreaterOrEqual(t, f.Calls(), int64(3), "the fence is asked once per mutating request at least")
}

func testNow(t *testing.T, s objstore.Store, _ config) {
	obj := put(t, s, "clock", "x")
	head, err := s.Head(t.Context(), "clock")
	require.NoError(t, err, "head")
	now, err := s.Now(t.Context())
	require.NoError(t, err, "now")
	// Now is a lower bound of the store's clock, read after the write: it
	// is not before the write's LastModified (both may be truncated to
	// TimeResolution).
	require.False(t, now.Before(head.LastModified.Truncate(objstore.TimeResolution)),
		"Now %s is before the LastModified %s of an object written before it", now, head.LastModified)
	require.False(t, obj.LastModified.IsZero(), "Put returns LastModified")
	// The test's stores run on this machine: the store's clock is this
	// host's, within a little.
	require.WithinDuration(t, time.Now(), now, 5*time.Second, "Now of a store on this host")
	_, err = s.Now(cancelled())
	require.Error(t, err, "Now with a cancelled context")
}

func testPruneEmptyLeavesObjects(t *testing.T, s objstore.Store, _ config) {
	put(t, s, "p/a/b/c", "c")
	put(t, s, "p/x", "x")
	err := s.PruneEmpty(t.Context(), "p/")
	// Stores with directories refuse a tree that holds objects; others do
	// nothing. Either way every object stays.
	_ = err
	requireBody(t, s, "p/a/b/c", "c")
	requireBody(t, s, "p/x", "x")
	require.NoError(t, s.Delete(t.Context(), "p/a/b/c"))
	require.NoError(t, s.Delete(t.Context(), "p/x"))
	require.NoError(t, s.PruneEmpty(t.Context(), "p/"), "prune an empty tree")
	require.NoError(t, s.PruneEmpty(t.Context(), "missing/"), "prune a missing prefix")
	objs, prefixes, _ := listAll(t, s, "")
	require.Empty(t, objs, "objects after prune")
	require.Empty(t, prefixes, "prefixes after prune")
}
