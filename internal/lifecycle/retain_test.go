//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/retention"
)

// lanceFixture is a table LanceDB 0.39 wrote (internal/lance/testdata): six
// versions, a deletion file, a bitmap index, a tag on version 2 and a
// restore of version 2 as version 6. Its branch is left out: the branch
// names main by the absolute path it was written at.
const lanceFixture = "../lance/testdata/lancedb-0.39/t.lance"

// putLanceFixture writes the fixture as table name and returns its keys.
func putLanceFixture(t *testing.T, s objstore.Store, name string) []string {
	t.Helper()
	var keys []string
	err := filepath.WalkDir(lanceFixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(lanceFixture, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "tree/") || strings.HasPrefix(rel, "_refs/branches/") {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		key := TableDir(name) + rel
		keys = append(keys, key)
		_, err = s.Put(context.Background(), key, body)
		return err
	})
	require.NoError(t, err)
	sort.Strings(keys)
	return keys
}

// fixturePolicy removes the fixture's versions but the newest two (and the
// tagged one): 1, 3 and 4. Its cutoff is just after the store's clock: the
// fixture was written now, and a version goes only when the store wrote
// it before the cutoff too (its manifest's timestamps are older).
func fixturePolicy(t *testing.T, s objstore.Store, name string) retention.Policy {
	t.Helper()
	tb, err := lance.ReadTable(context.Background(), s, TableDir(name))
	require.NoError(t, err)
	require.Len(t, tb.Versions, 6)
	now, err := s.Now(context.Background())
	require.NoError(t, err)
	return retention.Policy{Before: now.Add(time.Second), KeepVersions: 2}
}

// requireReadable checks that every version the table lists reads and that
// every file each references is there.
func requireReadable(t *testing.T, s objstore.Store, name string) *lance.Table {
	t.Helper()
	tb, err := lance.ReadTable(context.Background(), s, TableDir(name))
	require.NoError(t, err)
	have := snapshot(t, s)
	for _, v := range tb.Versions {
		keys, indices := v.Refs()
		for _, k := range keys {
			require.Contains(t, have, TableDir(name)+k, "version %d references %s", v.Number, k)
		}
		for _, ix := range indices {
			require.NotEmpty(t, keysUnder(have, TableDir(name)+lance.IndicesDir+ix+"/"), "version %d's index %s", v.Number, ix)
		}
	}
	return tb
}

// Retention deletes, file for file, what the plan names: the removed
// versions' manifests and the files only they referenced. Every version
// left reads, the tagged one too; the record is gone.
func TestRetainDeletesThePlan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		ns := newNSBatch(t, s, &clock{}, 2)
		putLanceFixture(t, s, "t")
		p := fixturePolicy(t, s, "t")
		plans, err := ns.PlanRetention(ctx, p)
		require.NoError(t, err)
		require.Len(t, plans, 1)
		require.Equal(t, RetentionPlanned, plans[0].Result)
		before := snapshot(t, s)

		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: p})
		require.NoError(t, err)
		require.Equal(t, RetainCleaned, res.Outcome)
		require.Equal(t, plans[0].Plan.Removed, res.Plan.Removed)
		var want []string
		for _, f := range plans[0].Plan.Files {
			want = append(want, f.Key)
		}
		var gone []string
		after := snapshot(t, s)
		for k := range before {
			if _, ok := after[k]; !ok {
				gone = append(gone, k)
			}
		}
		require.ElementsMatch(t, want, gone, "deleted exactly the plan's files")
		require.Equal(t, int64(len(want)), res.Objects)
		require.Equal(t, len(plans[0].Plan.Removed), res.VersionsRemoved)
		tb := requireReadable(t, s, "t")
		require.Contains(t, versionNumbers(tb), uint64(2), "the tagged version stays")
		require.NotContains(t, after, RetainKey("t"))
		require.NotContains(t, after, LockKey("t"))

		res, err = ns.Retain(ctx, "t", RetainOptions{Policy: p})
		require.NoError(t, err)
		require.Equal(t, RetainNothingToDo, res.Outcome)
	})
}

func versionNumbers(tb *lance.Table) []uint64 {
	var ns []uint64
	for _, v := range tb.Versions {
		ns = append(ns, v.Number)
	}
	return ns
}

// failNthBatch fails the n-th delete batch (1-based) before it is sent, as
// a process killed right there leaves the store.
type failNthBatch struct {
	objstore.Store
	n, seen atomic.Int64
}

var errKilled = errors.New("killed (injected)")

func (f *failNthBatch) Unwrap() objstore.Store { return f.Store }

func (f *failNthBatch) DeleteBatch(ctx context.Context, keys []string) error {
	if f.seen.Add(1) == f.n.Load() {
		return errKilled
	}
	return f.Store.DeleteBatch(ctx, keys)
}

// A run stopped before any of its batches (kill point 1: after its record),
// among its manifests (2), or among its files (later points) leaves its
// record; the next run finishes exactly the plan, and nothing a removed
// version alone referenced is left, whatever the files' age.
func TestRetainFinishesAnInterruptedRun(t *testing.T) {
	for _, kill := range []int64{1, 2, 3} {
		t.Run("batch "+string(rune('0'+kill)), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s objstore.Store) {
				ctx := context.Background()
				c := &clock{}
				putLanceFixture(t, s, "t")
				p := fixturePolicy(t, s, "t")
				clean := newNSBatch(t, s, c, 2)
				plans, err := clean.PlanRetention(ctx, p)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(plans[0].Plan.Files), 5, "batches of 2: three kill points at least")
				before := snapshot(t, s)

				f := &failNthBatch{Store: s}
				f.n.Store(kill)
				_, err = newNSBatch(t, f, c, 2).Retain(ctx, "t", RetainOptions{Policy: p})
				require.ErrorIs(t, err, errKilled)
				require.Contains(t, snapshot(t, s), RetainKey("t"), "the record stays for the next run")
				requireReadable(t, s, "t")

				c.Advance(DefaultLeaseTTL + DefaultSkewAllowance + 2*time.Second) // the lease of the "killed" run
				res, err := clean.Retain(ctx, "t", RetainOptions{Policy: p})
				require.NoError(t, err)
				require.True(t, res.Finished)
				require.Equal(t, RetainCleaned, res.Outcome)
				after := snapshot(t, s)
				var gone []string
				for k := range before {
					if _, ok := after[k]; !ok {
						gone = append(gone, k)
					}
				}
				var want []string
				for _, f := range plans[0].Plan.Files {
					want = append(want, f.Key)
				}
				require.ElementsMatch(t, want, gone)
				require.NotContains(t, after, RetainKey("t"))
				requireReadable(t, s, "t")
			})
		})
	}
}

// A tag created on a removed version after the plan (a writer that does
// not take reaper's lease) keeps that version and every file it references:
// the run reads the refs again before it deletes.
func TestRetainKeepsAVersionTaggedAfterThePlan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		plans, err := p.ns.PlanRetention(ctx, policy)
		require.NoError(t, err)
		require.Contains(t, plans[0].Plan.Removed, uint64(3))
		// Frozen at its second walk of _versions/: the plan is made and
		// recorded, nothing is deleted yet.
		frozen := p.pause.PauseBefore(objstoretest.OpWalk, TableDir("t")+lance.VersionsDir, 1)
		done := retainInBackground(p.ns, "t", RetainOptions{Policy: policy})
		<-frozen.Reached()
		_, err = w.store.Put(ctx, TableDir("t")+"_refs/tags/late.json", []byte(`{"branch":null,"version":3,"manifestSize":100}`))
		require.NoError(t, err)
		frozen.Release()
		require.NoError(t, <-done)
		tb := requireReadable(t, w.store, "t")
		require.Contains(t, versionNumbers(tb), uint64(3), "the version tagged since the plan stays")
	})
}

// A hold placed mid-run stops it before its next batch; the record stays,
// and once the hold is released the next run finishes.
func TestRetainStopsAtAHold(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		p.ns.opts.DeleteBatch = 2
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		frozen := p.pause.PauseBefore(objstoretest.OpDeleteBatch, TableDir("t"), 1)
		done := retainInBackground(p.ns, "t", RetainOptions{Policy: policy})
		<-frozen.Reached()
		_, err := w.proc("operator", 0).ns.PlaceHold(ctx, "t", "case 12")
		require.NoError(t, err)
		frozen.Release()
		require.ErrorIs(t, <-done, ErrHeld)
		require.Contains(t, snapshot(t, w.store), RetainKey("t"))
		requireReadable(t, w.store, "t")
		require.NoError(t, p.ns.ReleaseHold(ctx, "t"))
		res, err := p.ns.Retain(ctx, "t", RetainOptions{Policy: policy})
		require.NoError(t, err)
		require.True(t, res.Finished)
		requireReadable(t, w.store, "t")
	})
}

// A soft-deleted table is left to its purge; a paused root is not cleaned.
func TestRetainRefusals(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	putLanceFixture(t, s, "t")
	policy := fixturePolicy(t, s, "t")
	_, err := s.Put(ctx, PauseKey, nil)
	require.NoError(t, err)
	before := snapshot(t, s)
	_, err = ns.Retain(ctx, "t", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, ErrPaused)
	require.NoError(t, s.Delete(ctx, PauseKey))
	_, err = ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	_, err = ns.Retain(ctx, "t", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, ErrAlreadyDeleted)
	after := snapshot(t, s)
	delete(after, MarkerKey("t"))
	delete(before, PauseKey)
	require.Equal(t, before, after, "nothing deleted")
	_, err = ns.Retain(ctx, "nope", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, ErrNotFound)
}

// A purge removes a retention record a killed retention run left beside
// the table: nothing of the table remains to finish.
func TestPurgeRemovesARetentionRecord(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	c := &clock{}
	ns := newNSBatch(t, s, c, 2)
	putLanceFixture(t, s, "t")
	policy := fixturePolicy(t, s, "t")
	f := &failNthBatch{Store: s}
	f.n.Store(1)
	_, err := newNSBatch(t, f, c, 2).Retain(ctx, "t", RetainOptions{Policy: policy})
	require.ErrorIs(t, err, errKilled)
	c.Advance(DefaultLeaseTTL + DefaultSkewAllowance + 2*time.Second)
	_, err = ns.Drop(ctx, "t", time.Hour)
	require.NoError(t, err)
	c.Advance(2 * time.Hour)
	_, err = ns.Purge(ctx, "t", PurgeOptions{})
	require.NoError(t, err)
	require.Empty(t, snapshot(t, s))
}
