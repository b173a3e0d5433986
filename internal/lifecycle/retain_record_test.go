//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/retention"
)

// killRetain runs retention of table t with policy p and "kills" it at its
// kill-th delete batch (batches of 2 keys), leaving its record; the clock
// then moves past the killed run's lease.
func killRetain(t *testing.T, s objstore.Store, c *clock, p retention.Policy, kill int64) {
	t.Helper()
	f := &failNthBatch{Store: s}
	f.n.Store(kill)
	_, err := newNSBatch(t, f, c, 2).Retain(context.Background(), "t", RetainOptions{Policy: p})
	require.ErrorIs(t, err, errKilled)
	require.Contains(t, snapshot(t, s), RetainKey("t"), "the killed run left its record")
	c.Advance(DefaultLeaseTTL + DefaultSkewAllowance + 2*time.Second)
}

// A run interrupted after deleting part of its plan, then run again with
// the policy the operator meant (here: keep the newest five versions), no
// longer removes what the old record named and the new policy keeps: it
// takes over only the files of the versions the killed run had already
// removed, which no version LanceDB lists references. (Before, the record
// was finished whatever the policy: version 4 went.)
func TestRetainRecordNeverRemovesWhatTheCurrentPolicyKeeps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		putLanceFixture(t, s, "t")
		typo := fixturePolicy(t, s, "t") // removes 1, 3 and 4
		killRetain(t, s, c, typo, 2)     // the manifests of 1 and 3 went
		tb := requireReadable(t, s, "t")
		require.Equal(t, []uint64{2, 4, 5, 6}, versionNumbers(tb))

		meant := typo
		meant.KeepVersions = 5
		ns := newNSBatch(t, s, c, 2)
		plans, err := ns.PlanRetention(ctx, meant)
		require.NoError(t, err)
		require.NotNil(t, plans[0].Record, "the dry run shows the record")
		require.Empty(t, plans[0].Plan.Removed, "the meant policy removes no version")
		for _, f := range plans[0].Plan.Files {
			require.Equal(t, WhyRecorded, f.Why, "%s: only the record's still-true files", f.Key)
		}
		require.Equal(t, len(plans[0].Plan.Files), plans[0].Record.StillTrue)

		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: meant})
		require.NoError(t, err)
		require.True(t, res.Finished)
		tb = requireReadable(t, s, "t")
		require.Equal(t, []uint64{2, 4, 5, 6}, versionNumbers(tb), "version 4 stays: the policy meant keeps it")
		after := snapshot(t, s)
		require.NotContains(t, after, RetainKey("t"))
		for _, f := range plans[0].Plan.Files {
			require.NotContains(t, after, f.Key, "a file only removed versions referenced")
		}
		// Nothing is left that only the removed versions referenced.
		plans, err = ns.PlanRetention(ctx, retention.Policy{Before: c.Now().Add(time.Hour), KeepVersions: 5, DeleteUnverified: true})
		require.NoError(t, err)
		require.Empty(t, plans[0].Plan.Files, "no orphan left behind")
	})
}

// A table dropped and created again by LanceDB under the same name after a
// run was interrupted (a nightly rebuild) repeats the old table's manifest
// keys: the old record knows nothing of the new table and removes none of
// its versions. (Before, it deleted versions 1, 3 and 4 of the new table.)
func TestRetainRecordOfADroppedAndRecreatedTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		putLanceFixture(t, s, "t")
		p := fixturePolicy(t, s, "t")
		killRetain(t, s, c, p, 1) // the record is written, nothing deleted
		// LanceDB's drop_table, then create_table: the same keys again.
		dropTable(t, s, "t")
		c.Advance(time.Minute)
		putLanceFixture(t, s, "t")
		before := snapshot(t, s)

		keep := retention.Policy{OlderThan: time.Hour} // the new table is minutes old
		ns := newNSBatch(t, s, c, 2)
		res, err := ns.Retain(ctx, "t", RetainOptions{Policy: keep})
		require.NoError(t, err)
		require.Equal(t, RetainNothingToDo, res.Outcome)
		require.True(t, res.Finished, "the stale record was seen")
		require.Zero(t, res.Record.StillTrue)
		after := snapshot(t, s)
		require.NotContains(t, after, RetainKey("t"), "the stale record is dropped")
		delete(before, RetainKey("t"))
		require.Equal(t, before, after, "nothing of the new table deleted")
		require.Len(t, requireReadable(t, s, "t").Versions, 6)
	})
}

// The same re-creation between a run's plan and its first delete (under
// its lease): the manifests listed again at the same keys are not the ones
// planned, so nothing of the new table goes.
func TestRetainPlanOfADroppedAndRecreatedTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		plan, err := p.ns.PlanTableRetention(ctx, policy, "t", TablePlanOptions{Now: mustNow(t, w.store)})
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 3, 4}, plan.Plan.Removed)
		dropTable(t, w.store, "t")
		w.advance(time.Minute)
		putLanceFixture(t, w.store, "t")
		before := snapshot(t, w.store)
		_, err = p.ns.Retain(ctx, "t", RetainOptions{Policy: policy, Plan: &plan})
		require.NoError(t, err)
		after := snapshot(t, w.store)
		require.Equal(t, before, after, "nothing of the new table deleted")
		require.Len(t, requireReadable(t, w.store, "t").Versions, 6)
	})
}

func mustNow(t *testing.T, s objstore.Store) time.Time {
	t.Helper()
	now, err := s.Now(context.Background())
	require.NoError(t, err)
	return now
}

// renameManifests moves every manifest of main to scheme's name, as
// LanceDB's migrateManifestPathsV2 does (a copy, then the old key goes).
func renameManifests(t *testing.T, s objstore.Store, name string, scheme lance.Scheme) {
	t.Helper()
	ctx := context.Background()
	tb, err := lance.ReadTable(ctx, s, TableDir(name))
	require.NoError(t, err)
	for _, v := range tb.Versions {
		to := lance.VersionsDir + lance.ManifestName(scheme, v.Number)
		if to == v.Key {
			continue
		}
		body, _, err := s.Get(ctx, TableDir(name)+v.Key, lance.MaxManifestBytes)
		require.NoError(t, err)
		_, err = s.Put(ctx, TableDir(name)+to, body)
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, TableDir(name)+v.Key))
	}
}

// Manifests renamed during the run (migrateManifestPathsV2, between the
// plan and the manifest deletes): the deletes of the old keys miss, the
// versions are still listed, so none of their files is deleted and every
// version LanceDB lists still reads. (Before, their data files went.)
func TestRetainKeepsTheFilesOfVersionsStillListed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		// Frozen before its first delete batch, its plan narrowed already.
		frozen := p.pause.PauseBefore(objstoretest.OpDeleteBatch, TableDir("t"), 0)
		done := retainInBackground(p.ns, "t", RetainOptions{Policy: policy})
		<-frozen.Reached()
		renameManifests(t, w.store, "t", lance.SchemeV1)
		frozen.Release()
		require.NoError(t, <-done)
		tb := requireReadable(t, w.store, "t")
		require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, versionNumbers(tb), "every version LanceDB lists still reads")
	})
}

// A policy below the floor is refused before the lease, nothing deleted:
// OlderThan 7 (nanoseconds: "7 days" slipped) and an unverified_after of
// seconds (an index build in progress is such a file). MinTTL 0 allows it.
func TestRetainRefusesAPolicyBelowTheFloor(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	putLanceFixture(t, s, "t")
	before := snapshot(t, s)
	for _, p := range []retention.Policy{
		{OlderThan: 7},
		{OlderThan: 48 * time.Hour, UnverifiedAfter: 2 * time.Second},
	} {
		_, err := ns.Retain(ctx, "t", RetainOptions{Policy: p, MinTTL: time.Hour})
		require.ErrorIs(t, err, ErrShortTTL)
		require.ErrorIs(t, err, retention.ErrBelowFloor)
		require.Equal(t, before, snapshot(t, s), "nothing deleted")
	}
	res, err := ns.Retain(ctx, "t", RetainOptions{Policy: retention.Policy{OlderThan: 7, KeepVersions: 2}})
	require.NoError(t, err)
	require.Equal(t, RetainCleaned, res.Outcome, "without a floor the caller meant it")
}

// A record of format 1 (an older reaper's, without identities) is read and
// replaced: it adds nothing to the plan, and the table is cleaned by the
// policy given.
func TestRetainReadsAFormat1Record(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	c := &clock{}
	ns := newNS(t, s, c)
	putLanceFixture(t, s, "t")
	_, err := s.Put(ctx, RetainKey("t"), []byte(`{"format":1,"owner":"old","generation":1,"created_at_ms":1,"cutoff_ms":1,"versions":[1,2,3,4,5],"files":[{"key":"_versions/x.manifest","bytes":1}]}`))
	require.NoError(t, err)
	keepAll := retention.Policy{OlderThan: time.Hour}
	res, err := ns.Retain(ctx, "t", RetainOptions{Policy: keepAll})
	require.NoError(t, err)
	require.Equal(t, RetainNothingToDo, res.Outcome)
	require.Equal(t, 5, res.Record.Versions)
	require.NotContains(t, snapshot(t, s), RetainKey("t"))
	require.Len(t, requireReadable(t, s, "t").Versions, 6)

	_, err = s.Put(ctx, RetainKey("t"), []byte(`{"format":9}`))
	require.NoError(t, err)
	_, err = ns.Retain(ctx, "t", RetainOptions{Policy: keepAll})
	require.ErrorContains(t, err, "format 9")
}

// A tag created on a removed version between two manifest batches (a
// writer that does not take reaper's lease) keeps that version and its
// files: the tags are read again before every batch, not only once before
// the first. A tag that names a version already gone is reported.
func TestRetainReadsTheTagsBeforeEveryManifestBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		p.ns.opts.DeleteBatch = 1 // one manifest a batch: 1, 3, 4
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		// Frozen before its second batch (version 3's manifest).
		frozen := p.pause.PauseBefore(objstoretest.OpDeleteBatch, TableDir("t")+lance.VersionsDir, 1)
		done := make(chan RetainResult, 1)
		go func() {
			res, err := p.ns.Retain(ctx, "t", RetainOptions{Policy: policy, DeleteConcurrency: 1, MaxDeleteConcurrency: 1})
			require.NoError(t, err)
			done <- res
		}()
		<-frozen.Reached()
		for _, tag := range []struct {
			name    string
			version int
		}{{"late", 4}, {"gone", 1}} {
			_, err := w.store.Put(ctx, TableDir("t")+"_refs/tags/"+tag.name+".json", []byte(fmt.Sprintf(`{"branch":null,"version":%d,"manifestSize":100}`, tag.version)))
			require.NoError(t, err)
		}
		frozen.Release()
		res := <-done
		tb := requireReadable(t, w.store, "t")
		require.Equal(t, []uint64{2, 4, 5, 6}, versionNumbers(tb), "version 4, tagged mid-run, stays whole")
		require.Len(t, res.Warnings, 1)
		require.Contains(t, res.Warnings[0], `tag "gone" names version 1`)
	})
}

// An idle memo never says "still idle" where a full plan finds something
// to do: for several policies, a memo made when the fixture had nothing to
// do is asked at later times of the store's clock, before and after a tag
// is deleted, and each "still idle" is checked against a plan that reads
// the table whole.
func TestIdleMemoNeverHidesWork(t *testing.T) {
	ctx := context.Background()
	for _, p := range []retention.Policy{
		{OlderThan: time.Hour},
		{OlderThan: time.Hour, KeepVersions: 2},
		{OlderThan: time.Hour, KeepVersions: 10},
		{OlderThan: 7 * 24 * time.Hour, UnverifiedAfter: 2 * time.Hour},
		{Before: time.Now().Add(-time.Hour)},
	} {
		s := clockMemory()
		ns := newNS(t, s, &clock{})
		putLanceFixture(t, s, "t")
		now := mustNow(t, s)
		first, err := ns.PlanTableRetention(ctx, p, "t", TablePlanOptions{Now: now})
		require.NoError(t, err)
		require.Equal(t, RetentionNothingToDo, first.Result, "%+v: the fixture was just written", p)
		require.NotNil(t, first.Memo)
		idleSeen := 0
		for _, untag := range []bool{false, true} {
			if untag {
				require.NoError(t, s.Delete(ctx, TableDir("t")+"_refs/tags/release.json"))
			}
			for _, later := range []time.Duration{0, 30 * time.Minute, 61 * time.Minute, 3 * time.Hour, 8 * 24 * time.Hour} {
				at := now.Add(later)
				idle, err := ns.StillIdle(ctx, "t", first.Memo, p, at)
				require.NoError(t, err)
				full := ns.planTable(ctx, "t", p, at, false)
				if idle {
					idleSeen++
					require.Equal(t, RetentionNothingToDo, full.Result, "%+v at +%s (untagged %t): the memo said idle, the table has work", p, later, untag)
				}
			}
		}
		require.Positive(t, idleSeen, "%+v: the memo is of some use", p)
	}
}

// A table dropped and created again between the run's last recheck and its
// manifest batch (the new table writing its manifests at the planned keys)
// loses nothing: the batch lists _versions/ again once it has its slot and
// deletes a manifest only while it is listed as planned. (Found by the
// spin model: model/retain.pml, RECREATE_MIDRUN.)
func TestRetainManifestBatchSeesATableCreatedAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		w := newWorld(t, s)
		p := w.proc("retainer", 0)
		putLanceFixture(t, w.store, "t")
		policy := fixturePolicy(t, w.store, "t")
		// The tags are walked by the plan's read, the recheck before the
		// manifests, then the batch's own check: frozen at the third.
		frozen := p.pause.PauseBefore(objstoretest.OpWalk, TableDir("t")+"_refs/tags/", 2)
		done := retainInBackground(p.ns, "t", RetainOptions{Policy: policy, ProtectedRead: true})
		<-frozen.Reached()
		dropTable(t, w.store, "t")
		w.advance(time.Second)
		putLanceFixture(t, w.store, "t")
		before := snapshot(t, w.store)
		frozen.Release()
		require.NoError(t, <-done)
		after := snapshot(t, w.store)
		for k := range before {
			if strings.HasPrefix(k, TableDir("t")) {
				require.Contains(t, after, k, "the new table keeps %s", k)
			}
		}
		require.Len(t, requireReadable(t, w.store, "t").Versions, 6)
	})
}

// dropTable deletes every object of a table's directory, as LanceDB's
// drop_table does (no marker).
func dropTable(t *testing.T, s objstore.Store, name string) {
	t.Helper()
	for k := range snapshot(t, s) {
		if strings.HasPrefix(k, TableDir(name)) {
			require.NoError(t, s.Delete(context.Background(), k))
		}
	}
}

// retainInBackground runs a retention of name on ns and hands its error
// to the channel it returns: a test freezes it at a pause point meanwhile.
func retainInBackground(ns *Namespace, name string, opts RetainOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := ns.Retain(context.Background(), name, opts)
		done <- err
	}()
	return done
}
