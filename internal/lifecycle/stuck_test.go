//go:build !fuzzonly

package lifecycle

// Issue 25, items 4 and 6: once a purge has committed, whatever stops it
// from finishing is a failure that says what state the table is in and
// what to do (not a routine conflict), status shows the table as stuck,
// and an object the store cannot delete refuses the table before the
// commit.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// The marker removed by hand mid-purge leaves a table with no manifests and
// an orphan commit: before, a conflict (a skip, exit 0) and a table that
// status called live.
func TestStuckMarkerRemovedMidPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 250)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		require.NoError(t, w.store.Delete(ctx, MarkerKey("t")))
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrStuck)
		require.NotErrorIs(t, r.err, ErrConflict, "a failure, not a routine skip")
		require.ErrorContains(t, r.err, "reaper drop")
		st := statusOf(t, p.ns, "t")
		require.Equal(t, StateStuck, st.State)
		require.Contains(t, st.Problem, "LanceDB cannot open it")
		plan, err := p.ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		require.Equal(t, []string{"t"}, names(plan.Invalid), "reported failed on every pass")
		require.Empty(t, plan.Live, "not a live table")
	})
}

// A file written into a committed table stops the purge at its verify: a
// failure whose note the commit keeps, so status shows it on every later
// pass; each pass tries again, and once the file is gone one finishes it.
func TestStuckWriterIntoACommittedTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 250)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		_, err := w.store.Put(ctx, "t.lance/data/late.lance", []byte("written after the commit"))
		require.NoError(t, err)
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrStuck)
		require.NotErrorIs(t, r.err, ErrConflict)
		require.ErrorContains(t, r.err, "t.lance/data/late.lance")
		require.True(t, r.res.Committed)
		st := statusOf(t, p.ns, "t")
		require.Equal(t, StateStuck, st.State)
		require.Contains(t, st.Problem, "late.lance")

		_, err = p.ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrStuck, "the next pass fails again while the file is there")
		require.Equal(t, StateStuck, statusOf(t, p.ns, "t").State)

		require.NoError(t, w.store.Delete(ctx, "t.lance/data/late.lance"))
		_, err = p.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Empty(t, keysUnder(snapshot(t, w.store), "t."))
	})
}

// The commit removed by hand mid-purge: a failure; the marker is still
// there, so the next purge walks the table again, commits and finishes.
func TestStuckCommitRemovedMidPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 250)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		require.NoError(t, w.store.Delete(ctx, CommitKey("t")))
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrStuck)
		require.ErrorContains(t, r.err, "the next purge walks the table again")
		_, err := p.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Empty(t, keysUnder(snapshot(t, w.store), "t."))
	})
}

// rawPut writes a key the store under test refuses to name, straight to
// the server (S3, GCS and Azure accept names with empty segments);
// false where the backend cannot hold it.
func rawPut(t *testing.T, r objstoretest.Root, key string, body []byte) bool {
	t.Helper()
	switch {
	case r.GCS != nil:
		r.GCS.PutRaw(t, objstoretest.RootPrefix+key, body)
	case r.Azure != nil:
		_, err := r.Azure.Client.UploadBuffer(t.Context(), r.Azure.Container, objstoretest.RootPrefix+key, body, nil)
		require.NoError(t, err)
	default:
		return false // versitygw's posix backend maps "a//b" to "a/b"
	}
	return true
}

// An object named with an empty segment passed the walk and the commit,
// then every batch holding it was refused whole: the manifests were gone,
// every later pass failed, revive was refused. Now the walk refuses the
// table before the commit, naming the key, and a dry run says so too.
func TestUndeletableKeyRefusedBeforeTheCommit(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		r := b.NewRoot(t)
		w := newWorld(t, objstoretest.NewClockStore(retrying(t, r)))
		ctx := context.Background()
		p := w.proc("purger", 0)
		lanceTable(t, w.store, "t", 3)
		const odd = "t.lance/data//part-0.lance"
		require.True(t, rawPut(t, r, odd, []byte("x")))
		_, err := p.ns.Drop(ctx, "t", 0)
		require.NoError(t, err)
		w.advance(8 * day)
		before := snapshot(t, w.store)
		require.Contains(t, before, odd, "the walk lists it")
		for _, dry := range []bool{true, false} {
			_, err = p.ns.Purge(ctx, "t", PurgeOptions{DryRun: dry})
			require.ErrorIs(t, err, ErrUndeletableKey, "dry run %t", dry)
			require.ErrorContains(t, err, odd)
		}
		requireSameData(t, before, snapshot(t, w.store), "nothing deleted, no commit written")
		require.Equal(t, StateSoftDeleted, statusOf(t, p.ns, "t").State)
		require.NoError(t, p.ns.Revive(ctx, "t"), "still revivable")
	}, objstoretest.GCSStore, objstoretest.AzureStore)
}

// A table committed by a purge that could not see the problem (an older
// reaper) and holding such a key: finishing it is stuck, naming the key.
func TestUndeletableKeyInACommittedTableIsStuck(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		r := b.NewRoot(t)
		w := newWorld(t, objstoretest.NewClockStore(retrying(t, r)))
		ctx := context.Background()
		p := w.proc("purger", 0)
		lanceTable(t, w.store, "t", 3)
		const odd = "t.lance/data//part-0.lance"
		require.True(t, rawPut(t, r, odd, []byte("x")))
		_, err := p.ns.Drop(ctx, "t", 0)
		require.NoError(t, err)
		marker, _, err := w.store.Get(ctx, MarkerKey("t"), MaxControlBytes)
		require.NoError(t, err)
		_, err = w.store.PutIfAbsent(ctx, CommitKey("t"), encodeCommit(Commit{Owner: "old", Generation: 1, Marker: string(marker)}))
		require.NoError(t, err)
		w.advance(8 * day)
		_, err = p.ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrStuck)
		require.ErrorContains(t, err, odd)
		st := statusOf(t, p.ns, "t")
		require.Equal(t, StateStuck, st.State)
		require.Contains(t, st.Problem, "delete that object by hand")
	}, objstoretest.GCSStore, objstoretest.AzureStore)
}

// finishesBeforeMarkerRead is another purge finishing between status's read
// of a table's commit and its read of the marker: it deletes the commit,
// then the marker, as a purge's last steps do.
type finishesBeforeMarkerRead struct {
	objstore.Store
	name string
	done bool
}

func (s *finishesBeforeMarkerRead) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if key == MarkerKey(s.name) && !s.done {
		s.done = true
		if err := s.Store.Delete(ctx, CommitKey(s.name)); err != nil {
			return nil, objstore.Object{}, err
		}
		if err := s.Store.Delete(ctx, MarkerKey(s.name)); err != nil {
			return nil, objstore.Object{}, err
		}
	}
	return s.Store.Get(ctx, key, limit)
}

// A purge that finishes while status reads the table is not a stuck one:
// status read the commit, then found the marker gone, because the purge
// deleted both in between. Before, status (and every plan: a replica's
// pass) called the table stuck and failed it, exit 1, while another
// replica had purged it cleanly (TestReplicasSkewedClocks under load).
func TestFinishedMidStatusIsNotStuck(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 250)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		defer frozen.resume()
		ns, err := New(&finishesBeforeMarkerRead{Store: s, name: "t"}, Options{Logger: quiet()})
		require.NoError(t, err)
		st := statusOf(t, ns, "t")
		require.NotEqual(t, StateStuck, st.State, st.Problem)
		require.Empty(t, st.Problem)
	})
}
