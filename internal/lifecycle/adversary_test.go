//go:build !fuzzonly

package lifecycle

// The adversary's scenarios of docs/SAFETY.md ("Safety protocol"), each a
// test on every backend where it applies. Time is virtual (a ClockStore
// moves the store's clock, and every process's own clocks move with it);
// a process is frozen at a pause point of its own store wrapper (a Pauser)
// and resumed by the test. No sleeps: every wait is on a channel.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// world is the shared store and the virtual time of one scenario.
type world struct {
	t     *testing.T
	store *objstoretest.ClockStore
	mu    sync.Mutex
	// elapsed is how much virtual time has passed; every process clock
	// adds it.
	elapsed time.Duration
}

func newWorld(t *testing.T, s objstore.Store) *world {
	cs, ok := s.(*objstoretest.ClockStore)
	require.True(t, ok, "forEachBackend hands out ClockStores")
	return &world{t: t, store: cs}
}

// advance lets d pass for everyone: the store's clock and every process's
// clocks (a frozen process's CLOCK_BOOTTIME keeps counting).
func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.elapsed += d
	w.mu.Unlock()
	w.store.Advance(d)
}

func (w *world) since() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.elapsed
}

// proc is one reaper process: its own namespace over the shared store,
// through its own Pauser, with a host clock skewed by skew, deleting in
// batches of testBatch keys.
type proc struct {
	ns    *Namespace
	pause *objstoretest.Pauser
}

func (w *world) proc(name string, skew time.Duration) *proc {
	p := objstoretest.NewPauser(w.store)
	host := func() time.Time { return time.Now().Add(w.since() + skew) }
	lease := func() time.Time { return time.Now().Add(w.since()) }
	ns, err := New(p, Options{Now: host, LeaseClock: lease, Logger: quiet(), SpillDir: w.t.TempDir(), Owner: name, DeleteBatch: testBatch})
	require.NoError(w.t, err)
	return &proc{ns: ns, pause: p}
}

// leaseGone is virtual time enough for any lease to be taken over: its
// TTL, the store's resolution and the skew allowance, and then some.
const leaseGone = DefaultLeaseTTL + DefaultSkewAllowance + 2*time.Second

type purgeResult struct {
	res PurgeResult
	err error
}

// frozenPurge is a purge running in the background, frozen at a pause point.
type frozenPurge struct {
	pause *objstoretest.Pause
	done  chan purgeResult
}

// purgeFrozenAt starts purging name and returns once the purge is frozen
// before the skip+1-th op on a key with keyPrefix.
func (p *proc) purgeFrozenAt(name string, op objstoretest.Op, keyPrefix string, skip int) *frozenPurge {
	f := &frozenPurge{pause: p.pause.PauseBefore(op, keyPrefix, skip), done: make(chan purgeResult, 1)}
	go func() {
		res, err := p.ns.Purge(context.Background(), name, PurgeOptions{})
		f.done <- purgeResult{res, err}
	}()
	<-f.pause.Reached()
	return f
}

// resume lets the purge go on and waits for its end.
func (f *frozenPurge) resume() purgeResult {
	f.pause.Release()
	return <-f.done
}

// requireSameData fails the test with the keys that differ (ignoring
// leases, which come and go) rather than printing two whole snapshots.
func requireSameData(t *testing.T, want, got map[string]string, msg string) {
	t.Helper()
	var diff []string
	for k, v := range want {
		if strings.HasSuffix(k, LockSuffix) {
			continue
		}
		if g, ok := got[k]; !ok {
			diff = append(diff, "gone: "+k)
		} else if g != v {
			diff = append(diff, "changed: "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.HasSuffix(k, LockSuffix) {
			diff = append(diff, "new: "+k)
		}
	}
	sort.Strings(diff)
	if len(diff) > 10 {
		diff = append(diff[:10], fmt.Sprintf("and %d more", len(diff)-10))
	}
	require.Empty(t, diff, msg)
}

// dueTable writes a Lance table of n data files, drops it with a one-hour
// TTL and lets the TTL pass.
func dueTable(t *testing.T, w *world, p *proc, name string, n int) int {
	t.Helper()
	objs := lanceTable(t, w.store, name, n)
	_, err := p.ns.Drop(context.Background(), name, time.Hour)
	require.NoError(t, err)
	w.advance(time.Hour + time.Second)
	return objs
}

// Scenario 1: a revive on a host whose clock runs 80 s to days ahead
// cannot take over a live purge's lease: takeovers read the store's
// clock. The purge finishes, and nothing else happened to the table.
func TestAdversarySkewedReviveCannotTakeOverLivePurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		purger := w.proc("purger", 0)
		n := dueTable(t, w, purger, "t", 40)
		frozen := purger.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 0)
		for _, skew := range []time.Duration{80 * time.Second, 5 * time.Minute, 7 * day} {
			reviver := w.proc(fmt.Sprintf("reviver+%s", skew), skew)
			err := reviver.ns.Revive(context.Background(), "t")
			require.ErrorIs(t, err, ErrLocked, "a reviver %s ahead", skew)
		}
		_, err := s.Head(context.Background(), MarkerKey("t"))
		require.NoError(t, err, "the marker stays")
		r := frozen.resume()
		require.NoError(t, r.err)
		require.Equal(t, OutcomePurged, r.res.Outcome)
		require.Equal(t, int64(n), r.res.Objects)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// Scenario 2: a purge frozen (before it committed) for longer than its
// lease; another process takes the lease over and revives the table. On
// resume the purge re-validates before its first delete and finds its
// lease gone: it deletes nothing and fails (lease lost).
func TestAdversaryPausedPurgeAfterRevive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		purger, reviver := w.proc("purger", 0), w.proc("reviver", 0)
		dueTable(t, w, purger, "t", 150)
		frozen := purger.purgeFrozenAt("t", objstoretest.OpWalk, "t.lance/", 0)
		w.advance(leaseGone)
		require.NoError(t, reviver.ns.Revive(context.Background(), "t"), "the lease expired by the store's clock")
		revived := snapshot(t, s)
		r := frozen.resume()
		require.ErrorIs(t, r.err, lock.ErrLost)
		require.Zero(t, r.res.Objects)
		requireSameData(t, revived, snapshot(t, s), "the revived table is whole, and no commit was written")
		require.Equal(t, StateExists, statusOf(t, reviver.ns, "t").State)
	})
}

// Scenario 2, conflicts under a lost lease: a purge frozen for longer than
// its lease, between taking the lease and re-reading the marker under it,
// or before its final walk; another process takes the lease over and
// revives the table, or purges it and a user creates it again under the
// same keys. On resume the purge finds the marker gone, or files it never
// saw, and must say why: its lease was lost (a failure, alerted), not a
// conflict (a skip).
func TestAdversaryConflictUnderALostLeaseIsLeaseLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   objstoretest.Op
		key  string
		skip int
		then func(t *testing.T, w *world, s objstore.Store)
	}{
		// The plan's read of the marker is the first Get; the one under
		// the lease is the second.
		{"before the marker's re-read, revived", objstoretest.OpGet, MarkerKey("t"), 1, func(t *testing.T, w *world, _ objstore.Store) {
			require.NoError(t, w.proc("reviver", 0).ns.Revive(context.Background(), "t"))
		}},
		// The first walk is the fence's; the second finds the leftovers.
		{"before the final walk, purged and created again", objstoretest.OpWalkStart, "t.lance/", 1, func(t *testing.T, w *world, s objstore.Store) {
			// The frozen purge had deleted the data: the second finishes
			// its commit and marker.
			_, err := w.proc("second", 0).ns.Purge(context.Background(), "t", PurgeOptions{})
			require.NoError(t, err)
			require.Empty(t, keysUnder(snapshot(t, s), "t."))
			lanceTable(t, s, "t", 3)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s objstore.Store) {
				w := newWorld(t, s)
				purger := w.proc("purger", 0)
				dueTable(t, w, purger, "t", 20)
				frozen := purger.purgeFrozenAt("t", tc.op, tc.key, tc.skip)
				_, err := s.Head(context.Background(), LockKey("t"))
				require.NoError(t, err, "frozen under its lease")
				w.advance(leaseGone)
				tc.then(t, w, s)
				after := snapshot(t, s)
				r := frozen.resume()
				require.ErrorIs(t, r.err, lock.ErrLost)
				var conflict *ConflictError
				require.False(t, errors.As(r.err, &conflict), "not a conflict: %v", r.err)
				requireSameData(t, after, snapshot(t, s), "the resumed purge touched the table")
			})
		})
	}
}

// Scenario 2, mid-batch: a purge frozen with a delete batch in hand (its
// guard passed, the request not yet sent) for longer than its lease. A
// second purge takes the lease over and finishes the table. The first
// one's batch then meets the fence in the backend and is never sent: no
// two processes ever delete under one table.
func TestAdversaryPausedBatchMeetsTheFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		first, second := w.proc("first", 0), w.proc("second", 0)
		n := dueTable(t, w, first, "t", 150)
		frozen := first.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 0)
		require.Equal(t, StatePurging, statusOf(t, second.ns, "t").State)
		w.advance(leaseGone)
		res, err := second.ns.Purge(context.Background(), "t", PurgeOptions{})
		require.NoError(t, err, "the second purge takes over and finishes the committed table")
		require.Equal(t, int64(n), res.Objects, "the first purge deleted nothing")
		r := frozen.resume()
		// The resumed batch meets the fence (or the lease's cancelled
		// context, whichever the process sees first): it sends nothing.
		require.ErrorIs(t, r.err, lock.ErrLost, "the resumed purge fails: lease lost")
		require.Zero(t, r.res.Objects)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// Scenario 3: a revive frozen between its checks and its marker delete;
// a purge takes the expired lease over and purges. The revive resumes and
// its marker delete meets the fence: it fails (lease lost) instead of
// printing "revived" over a table that is gone.
func TestAdversaryPausedReviveMeetsTheFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		reviver, purger := w.proc("reviver", 0), w.proc("purger", 0)
		n := dueTable(t, w, purger, "t", 20)
		frozen := reviver.pause.PauseBefore(objstoretest.OpDeleteIfMatch, MarkerKey("t"), 0)
		revived := make(chan error, 1)
		go func() { revived <- reviver.ns.Revive(context.Background(), "t") }()
		<-frozen.Reached()
		w.advance(leaseGone)
		res, err := purger.ns.Purge(context.Background(), "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(n), res.Objects)
		frozen.Release()
		err = <-revived
		require.ErrorIs(t, err, lock.ErrLost, "revive must not report success")
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
		require.Equal(t, StateNotFound, statusOf(t, purger.ns, "t").State)
	})
}

// Scenario 5: neither a dropper whose clock runs 7 days behind nor a
// purger whose clock runs 7 days ahead makes a fresh 7-day drop due: the
// marker's LastModified (the store's clock) must be a TTL old too.
func TestAdversaryClocksCannotMakeAFreshDropDue(t *testing.T) {
	const week = 7 * day
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		lanceTable(t, s, "t", 3)
		w.advance(week) // the data is a week old
		// A dropper (Lance) whose clock is a week behind the store's.
		behind := time.Now().Add(w.since() - week)
		_, err := s.PutIfAbsent(ctx, MarkerKey("t"), EncodeMarker(behind, week))
		require.NoError(t, err)
		purger := w.proc("purger+7d", week)
		p, err := purger.ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		require.Empty(t, p.Due, "by the dropper's clock it is due; by the store's it is a minute old")
		require.Equal(t, []string{"t"}, names(p.NotDue))
		before := snapshot(t, s)
		_, err = purger.ns.Purge(ctx, "t", PurgeOptions{})
		var nd *NotDueError
		require.ErrorAs(t, err, &nd)
		requireSameData(t, before, snapshot(t, s), "not due: untouched")
		// A caller's now can make the plan stricter, never looser.
		p, err = purger.ns.PlanPurge(ctx, time.Now().Add(w.since()+10*week))
		require.NoError(t, err)
		require.Empty(t, p.Due)

		w.advance(week)
		res, err := purger.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err, "a week later by the store's clock")
		require.Equal(t, OutcomePurged, res.Outcome)
	})
}

// Scenario 6: a legal hold placed while the purge walks the table (before
// its first delete) stops it: the guard reads the hold immediately before
// the commit. Nothing is deleted and the table stays revivable.
func TestAdversaryHoldDuringTheWalk(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		purger, operator := w.proc("purger", 0), w.proc("operator", 0)
		dueTable(t, w, purger, "t", 150)
		frozen := purger.purgeFrozenAt("t", objstoretest.OpWalk, "t.lance/", 0)
		_, err := operator.ns.PlaceHold(context.Background(), "t", "case 7")
		require.NoError(t, err)
		held := snapshot(t, s)
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrHeld)
		require.Zero(t, r.res.Objects)
		requireSameData(t, held, snapshot(t, s), "nothing deleted, no commit written")
		st := statusOf(t, operator.ns, "t")
		require.Equal(t, StateSoftDeleted, st.State)
		require.NotNil(t, st.Hold)
	})
}

// Scenario 6, mid-purge: a hold placed while a batch is in flight stops
// the purge before its next batch. The table stays partially purged and
// held: never revived at an old version, never purged while held.
func TestAdversaryHoldMidPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		purger, operator := w.proc("purger", 0), w.proc("operator", 0)
		n := dueTable(t, w, purger, "t", 250)
		frozen := purger.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		_, err := operator.ns.PlaceHold(ctx, "t", "case 8")
		require.NoError(t, err)
		r := frozen.resume()
		require.ErrorIs(t, r.err, ErrHeld)
		require.Less(t, r.res.Objects, int64(n))
		left := keysUnder(snapshot(t, s), "t.lance/")
		require.Len(t, left, n-int(r.res.Objects), "only the batches sent before the hold are gone")
		st := statusOf(t, operator.ns, "t")
		require.Equal(t, StatePartiallyPurged, st.State)
		require.NotNil(t, st.Hold)
		require.ErrorIs(t, operator.ns.Revive(ctx, "t"), ErrPartiallyPurged)
		_, err = operator.ns.Purge(ctx, "t", PurgeOptions{})
		require.ErrorIs(t, err, ErrHeld)
		require.Len(t, keysUnder(snapshot(t, s), "t.lance/"), len(left))
		// Released, the next purge finishes it.
		require.NoError(t, operator.ns.ReleaseHold(ctx, "t"))
		_, err = operator.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// Scenario 7: a purge that stops inside its manifests (a kill after the
// first batch, or an object budget reached inside them) leaves a table
// that revive refuses: it would come back at an older version.
func TestAdversaryPartialPurgeIsNotRevivable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		lanceTable(t, s, "t", 20)
		for i := 4; i <= 80; i++ {
			_, err := s.Put(ctx, fmt.Sprintf("t.lance/_versions/%d.manifest", i), []byte("m"))
			require.NoError(t, err)
		}
		_, err := p.ns.Drop(ctx, "t", time.Hour)
		require.NoError(t, err)
		w.advance(time.Hour + time.Second)
		// The process dies after its first batch (the 80 manifests).
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		w.advance(leaseGone) // it never comes back
		require.Empty(t, keysUnder(snapshot(t, s), "t.lance/_versions/"), "the manifests went first")
		other := w.proc("operator", 0)
		st := statusOf(t, other.ns, "t")
		require.Equal(t, StatePartiallyPurged, st.State)
		err = other.ns.Revive(ctx, "t")
		require.ErrorIs(t, err, ErrPartiallyPurged)
		require.ErrorContains(t, err, "partially purged: cannot revive")
		// Any later pass finishes it.
		res, err := other.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
		r := frozen.resume()
		require.ErrorIs(t, r.err, lock.ErrLost)
	})
}

// Scenario 7, at the end: a purge that deleted all the data and stopped
// before removing its commit leaves a table status calls partially_purged;
// revive says the same ("partially purged: cannot revive"), not "not found".
func TestAdversaryCommittedWithoutDataIsPartiallyPurged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 20)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteIfMatch, CommitKey("t"), 0)
		require.Empty(t, keysUnder(snapshot(t, s), "t.lance/"), "the data is gone")
		other := w.proc("operator", 0)
		require.Equal(t, StatePurging, statusOf(t, other.ns, "t").State, "partially purged, under a live lease")
		err := other.ns.Revive(ctx, "t")
		require.ErrorIs(t, err, ErrPartiallyPurged)
		require.ErrorContains(t, err, "partially purged: cannot revive")
		require.ErrorContains(t, err, "run purge to finish it")
		r := frozen.resume()
		require.NoError(t, r.err)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// Scenario 12, at the last step: the purge's marker delete lands, the
// process freezes before it reads the answer and wakes past its lease; the
// answer is lost and its retry refused. The table is gone (data, commit,
// marker, all deleted under the lease): it is reported purged, not
// failed, so exactly one purge counts it.
func TestAdversaryLostAnswerOfTheMarkerDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		n := dueTable(t, w, p, "t", 20)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteIfMatchAnswer, MarkerKey("t"), 0)
		_, err := s.Head(ctx, MarkerKey("t"))
		require.ErrorIs(t, err, objstore.ErrNotFound, "the delete landed")
		w.advance(leaseGone)
		r := frozen.resume()
		require.NoError(t, r.err)
		require.Equal(t, OutcomePurged, r.res.Outcome)
		require.Equal(t, int64(n), r.res.Objects)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// ... and the other way round: the purge freezes before its marker delete
// is sent and wakes past its lease, after a second purge took the lease
// over and removed the marker (an orphan by then). The first purge's
// delete is refused by the fence; the marker is gone, but not by its hand:
// it reports lease_lost, and only the second counts the table.
func TestAdversaryMarkerRemovedByTheTakeover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 20)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteIfMatch, MarkerKey("t"), 0)
		w.advance(leaseGone)
		second, err := w.proc("second", 0).ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomeOrphanMarker, second.Outcome)
		r := frozen.resume()
		require.ErrorIs(t, r.err, lock.ErrLost)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))
	})
}

// Scenario 12: a lease lost in the middle of the deletes is a failure
// (errors.Is lock.ErrLost), not an interruption, on every backend.
func TestAdversaryLostLeaseIsAFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		p := w.proc("purger", 0)
		dueTable(t, w, p, "t", 250)
		frozen := p.purgeFrozenAt("t", objstoretest.OpDeleteBatch, "t.lance/", 1)
		w.advance(DefaultLeaseTTL) // past its deadline, not yet past takeover
		r := frozen.resume()
		require.Error(t, r.err)
		require.ErrorIs(t, r.err, lock.ErrLost)
		require.NotErrorIs(t, r.err, context.Canceled, "a lost lease is not a cancellation")
		st := statusOf(t, w.proc("operator", 0).ns, "t")
		require.Contains(t, []State{StatePartiallyPurged, StatePurging}, st.State)
	})
}

// Scenario 13: a key the store keeps although a batch delete "succeeded"
// is deleted alone; one it refuses even alone fails the purge, named,
// with the commit and the marker kept (not a misleading conflict).
func TestAdversaryKeyTheStoreKeeps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		n := dueTable(t, w, p, "t", 30)
		sticky := &keepKeys{Store: p.pause, skip: map[string]bool{"t.lance/data/000007-0a1b.lance": true}}
		ns, err := New(sticky, p.ns.Options())
		require.NoError(t, err)
		res, err := ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err, "the silently kept key is deleted alone")
		require.Equal(t, int64(n), res.Objects)
		require.Empty(t, keysUnder(snapshot(t, s), "t."))

		dueTable(t, w, p, "u", 30)
		stuck := "u.lance/data/000011-0a1b.lance"
		refusing := &keepKeys{Store: p.pause, skip: map[string]bool{stuck: true}, refuse: true}
		ns, err = New(refusing, p.ns.Options())
		require.NoError(t, err)
		_, err = ns.Purge(ctx, "u", PurgeOptions{})
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrConflict, "not a writer")
		require.ErrorContains(t, err, stuck)
		require.Equal(t, []string{stuck}, keysUnder(snapshot(t, s), "u.lance/"))
		st := statusOf(t, p.ns, "u")
		require.Equal(t, StatePartiallyPurged, st.State, "marker and commit kept; the next pass retries")
	})
}

// keepKeys makes DeleteBatch skip some keys while answering success, as a
// store that cannot carry a key in its batch request might; with refuse,
// a single Delete of such a key fails too.
type keepKeys struct {
	objstore.Store
	skip   map[string]bool
	refuse bool
}

func (k *keepKeys) Unwrap() objstore.Store { return k.Store }

func (k *keepKeys) DeleteBatch(ctx context.Context, keys []string) error {
	var rest []string
	for _, key := range keys {
		if !k.skip[key] {
			rest = append(rest, key)
		}
	}
	return k.Store.DeleteBatch(ctx, rest)
}

func (k *keepKeys) Delete(ctx context.Context, key string) error {
	if k.refuse && k.skip[key] {
		return errors.New("api error InvalidArgument: the key cannot be deleted")
	}
	return k.Store.Delete(ctx, key)
}

// A table whose purge committed, then was revived and dropped again by a
// writer outside reaper (a new marker): the old commit is stale. It never
// makes the new drop due early; status names it; a purge of the new drop
// (once due) removes it; a revive removes it too.
func TestAdversaryStaleCommitNeverFinishesANewDrop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		p := w.proc("purger", 0)
		lanceTable(t, s, "t", 3)
		old := EncodeMarker(time.Now().Add(-30*day), time.Hour)
		_, err := s.Put(ctx, CommitKey("t"), encodeCommit(Commit{Owner: "gone/1", Generation: 3, CommittedAtMs: 1, Marker: string(old)}))
		require.NoError(t, err)
		w.advance(time.Second)
		_, err = p.ns.Drop(ctx, "t", day) // the new drop, a day's TTL
		require.NoError(t, err)

		st := statusOf(t, p.ns, "t")
		require.Equal(t, StateSoftDeleted, st.State, "not partially purged: the commit names another marker")
		require.Contains(t, st.Problem, "names an earlier marker")
		plan, err := p.ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		require.Equal(t, []string{"t"}, names(plan.NotDue), "the new drop keeps its own TTL")
		_, err = p.ns.Purge(ctx, "t", PurgeOptions{})
		var nd *NotDueError
		require.ErrorAs(t, err, &nd)
		require.Len(t, keysUnder(snapshot(t, s), "t.lance/"), 10)

		w.advance(day + time.Second)
		res, err := p.ns.Purge(ctx, "t", PurgeOptions{})
		require.NoError(t, err)
		require.Equal(t, OutcomePurged, res.Outcome)
		require.Empty(t, keysUnder(snapshot(t, s), "t."), "the stale commit went with the table")

		// Revive clears a stale commit as well.
		lanceTable(t, s, "u", 1)
		_, err = s.Put(ctx, CommitKey("u"), encodeCommit(Commit{Owner: "gone/1", Marker: string(old)}))
		require.NoError(t, err)
		_, err = p.ns.Drop(ctx, "u", day)
		require.NoError(t, err)
		require.NoError(t, p.ns.Revive(ctx, "u"))
		snap := snapshot(t, s)
		require.NotContains(t, snap, CommitKey("u"))
		require.NotContains(t, snap, MarkerKey("u"))
		require.Len(t, keysUnder(snap, "u.lance/"), 8)
	})
}
