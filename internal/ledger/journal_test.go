package ledger_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/clocktest"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/retry"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/stack"
)

// journaled is a journal test's ledger store: a real store behind a clock
// the test moves (the store's, deciding lease takeovers) and the writing
// pass's own lease clock.
type journaled struct {
	store objstore.Store
	clock *objstoretest.ClockStore
	// holder is the clock of the pass writing the journal: moved with the
	// store's, that pass finds its lease lost, as a killed or frozen
	// process's would be once it resumed.
	holder *clocktest.Offset
}

// journalTTL is long next to a test, so that no renewal lands while the
// test moves the clocks: a lease expires only when die moves them.
const journalTTL = 10 * time.Minute

func newJournaled(s objstore.Store) *journaled {
	return &journaled{store: s, clock: objstoretest.NewClockStore(s), holder: &clocktest.Offset{}}
}

func (j *journaled) opts(owner string, clock func() time.Time) ledger.JournalOptions {
	return ledger.JournalOptions{Owner: owner, TTL: journalTTL, Skew: 100 * time.Millisecond, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// journal is pass passID's journal, its lease on j.holder's clock.
func (j *journaled) journal(passID string, started time.Time) *ledger.Journal {
	return ledger.NewJournal(j.clock, passID, started, j.opts(passID, j.holder.Now))
}

// die makes every lease written so far expired by the store's clock and
// by its holder's own: the pass that held it is gone (or frozen past it).
func (j *journaled) die() {
	d := journalTTL + 2*time.Second + time.Second
	j.holder.Advance(d)
	j.clock.Advance(d)
}

// recoverAs folds dead journals as pass by.
func (j *journaled) recoverAs(t *testing.T, by string) []ledger.Recovered {
	t.Helper()
	recs, err := ledger.Recover(t.Context(), j.clock, by, j.opts(by, nil))
	require.NoError(t, err)
	return recs
}

func tableRow(passID, root, table string, started time.Time) ledger.Row {
	return ledger.Row{PassID: passID, Root: root, Table: table, Started: started, Finished: started,
		DeletedAt: started.Add(-8 * 24 * time.Hour), TTL: dur(7 * 24 * time.Hour), Version: "v1", Host: "h"}
}

func purgedRow(r ledger.Row, objects int64) ledger.Row {
	r.Action, r.Reason, r.Objects, r.Bytes = string(outcome.Purged), "due: purged", objects, objects*100
	r.Finished = r.Started.Add(time.Second)
	return r
}

// keysUnder lists the keys of s under prefix.
func keysUnder(t *testing.T, s objstore.Store, prefix string) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.Walk(t.Context(), prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}

// Table names may hold any byte but '/', '\' and NUL: every record key is
// a hash, valid on every store, and the names read back exactly.
func TestJournalKeysHoldAnyTableName(t *testing.T) {
	names := []string{"plain", "with space", "new\nline", "tab\tand\rcr", "ünïcødé-表", "bad-utf8-\xff\xfe", "..", ".", "%2F..%2F",
		strings.Repeat("long", 60), "quote\"and'", "emoji-🙂", "ends.deleted", "x.lance"}
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-a", t0)
		for _, n := range names {
			require.NoError(t, jr.Intent(t.Context(), tableRow("pass-a", "s3://b/db\x01", n, t0), 3, 300, false), "intent of %q", n)
		}
		rows, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		got := map[string]bool{}
		for _, r := range rows {
			require.True(t, r.Pending, "a journal row reads pending: %+v", r)
			require.Equal(t, "s3://b/db\x01", r.Root)
			got[r.Table] = true
		}
		for _, n := range names {
			require.True(t, got[n], "table %q reads back from the journal (got %q)", n, got)
		}
		for _, k := range keysUnder(t, s, ledger.JournalPrefix) {
			require.Regexp(t, `^journal/pass-a/(lease|[0-9a-f]{32}\.json)$`, k)
		}
		require.NoError(t, jr.Close(t.Context(), false))
		require.Empty(t, keysUnder(t, s, ledger.JournalPrefix), "a closed journal leaves nothing")
	})
}

// Two tables in LanceDB namespaces may carry one object id (the row's
// table); their directories (location) keep their journal records apart,
// and the location reads back from the journal and from the file.
func TestJournalKeepsTablesOfOneObjectIDApart(t *testing.T) {
	s := memstore.New()
	j := newJournaled(s)
	jr := j.journal("pass-a", t0)
	for _, loc := range []string{"33333333_tenant_a$old/", "44444444_tenant_a$old/"} {
		r := tableRow("pass-a", "/db", "tenant_a$old", t0)
		r.Location = loc
		require.NoError(t, jr.Intent(t.Context(), r, 3, 300, false))
	}
	rows, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	var locs []string
	for _, r := range rows {
		require.Equal(t, "tenant_a$old", r.Table)
		locs = append(locs, r.Location)
	}
	require.ElementsMatch(t, []string{"33333333_tenant_a$old/", "44444444_tenant_a$old/"}, locs)
	require.NoError(t, jr.Close(t.Context(), false))
}

// A pass killed after recording intents (one table decided, one not) is
// folded by the next pass into a file of its own: the decided table's row
// as decided, the other an honest unfinished row, both marked recovered;
// the journal is gone.
func TestRecoverFoldsADeadPass(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-dead", t0)
		done, cut := tableRow("pass-dead", "/db", "done", t0), tableRow("pass-dead", "/db", "cut", t0.Add(time.Second))
		require.NoError(t, jr.Intent(t.Context(), done, 4, 400, false))
		require.NoError(t, jr.Outcome(t.Context(), purgedRow(done, 4)))
		require.NoError(t, jr.Intent(t.Context(), cut, 7, 700, true))
		// Pending while nobody folded it: reaper audit shows both.
		rows, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		require.Len(t, rows, 2)
		j.die() // killed: no file, no Close

		recs := j.recoverAs(t, "pass-next")
		require.Len(t, recs, 1)
		require.Equal(t, "pass-dead", recs[0].PassID)
		require.Equal(t, 2, recs[0].Rows)
		require.Contains(t, recs[0].Key, "-pass-dead.recovered-pass-next.parquet")
		require.Empty(t, keysUnder(t, s, ledger.JournalPrefix), "folded journal removed, lease included")

		rows, err = ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		require.Len(t, rows, 2)
		byTable := map[string]ledger.Row{}
		for _, r := range rows {
			require.Equal(t, "pass-dead", r.PassID)
			require.Equal(t, "pass-next", r.RecoveredBy)
			require.False(t, r.Pending)
			byTable[r.Table] = r
		}
		want := stored(purgedRow(done, 4))
		want.RecoveredBy = "pass-next"
		require.Equal(t, want, byTable["done"])
		u := byTable["cut"]
		require.Equal(t, string(outcome.Failed), u.Action)
		require.True(t, strings.HasPrefix(u.Reason, string(outcome.ReasonUnfinished)+": "), u.Reason)
		require.Contains(t, u.Error, "intent to purge 7 object(s) (700 bytes)")
		require.Contains(t, u.Error, "already carried a purge commit, so it is partly or fully purged")
		require.Zero(t, u.Objects, "nobody knows how many were deleted")
		require.Equal(t, stored(cut).DeletedAt, u.DeletedAt)

		require.Empty(t, j.recoverAs(t, "pass-later"), "folded once")
	})
}

// An intent written before the commit says the table may be untouched:
// the purge may have died before committing.
func TestUnfinishedIntentBeforeCommitIsHonest(t *testing.T) {
	s := memstore.New()
	j := newJournaled(s)
	jr := j.journal("pass-dead", t0)
	require.NoError(t, jr.Intent(t.Context(), tableRow("pass-dead", "/db", "t", t0), 2, 20, false))
	j.die()
	j.recoverAs(t, "pass-next")
	rows, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Contains(t, rows[0].Error, "may have stopped before its commit (the table untouched, still soft-deleted) or after it (partly or fully purged)")
}

// The journal of a pass still running is never folded: its lease is held.
// Its rows read as pending meanwhile, and its own file is the only one.
func TestRecoverLeavesARunningPassAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-running", t0)
		row := tableRow("pass-running", "/db", "t", t0)
		require.NoError(t, jr.Intent(t.Context(), row, 1, 10, false))
		before := keysUnder(t, s, ledger.JournalPrefix)

		require.Empty(t, j.recoverAs(t, "pass-other"))
		require.Equal(t, before, keysUnder(t, s, ledger.JournalPrefix), "the running pass's journal is untouched")

		require.NoError(t, jr.Outcome(t.Context(), purgedRow(row, 1)))
		writePass(t, s, "pass-running", t0, []ledger.Row{purgedRow(row, 1)})
		require.NoError(t, jr.Close(t.Context(), false))
		rows, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Empty(t, rows[0].RecoveredBy)
		require.False(t, rows[0].Pending)
		require.Empty(t, keysUnder(t, s, ledger.JournalPrefix))
	})
}

// A pass killed after writing its file but before removing its journal is
// folded again: two rows with the same pass id, root and table, the copy
// marked recovered_by; Read returns the pass's own once.
func TestRecoverAfterTheFileKeepsOneRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-a", t0)
		row := tableRow("pass-a", "/db", "t", t0)
		require.NoError(t, jr.Intent(t.Context(), row, 1, 10, false))
		require.NoError(t, jr.Outcome(t.Context(), purgedRow(row, 1)))
		own := writePass(t, s, "pass-a", t0, []ledger.Row{purgedRow(row, 1)})
		j.die()
		recs := j.recoverAs(t, "pass-b")
		require.Len(t, recs, 1)
		require.NotEqual(t, own, recs[0].Key, "a folded journal never takes the dead pass's own key")

		rows, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		require.Len(t, rows, 1, "one row per pass, root and table")
		require.Empty(t, rows[0].RecoveredBy, "the pass's own row wins")
	})
}

// A pass whose lease was taken over (frozen past it, then folded) writes
// nothing more into its journal: its writes carry the lease's fence.
func TestJournalFencedOnceFolded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-frozen", t0)
		row := tableRow("pass-frozen", "/db", "t", t0)
		require.NoError(t, jr.Intent(t.Context(), row, 1, 10, false))
		j.die()
		require.Len(t, j.recoverAs(t, "pass-b"), 1)

		err := jr.Outcome(t.Context(), purgedRow(row, 1))
		require.ErrorIs(t, err, ledger.ErrJournal)
		err = jr.Intent(t.Context(), tableRow("pass-frozen", "/db", "u", t0), 1, 10, false)
		require.ErrorIs(t, err, ledger.ErrJournal, "no intent after a failed write")
		require.Empty(t, keysUnder(t, s, ledger.JournalPrefix), "nothing written after the fold")
		require.NoError(t, jr.Close(t.Context(), true))
	})
}

// refusing fails every write of a key it matches, as a bucket policy or a
// full disk would, counting the attempts.
type refusing struct {
	objstore.Store
	match    func(key string) bool
	attempts atomic.Int64
}

var errRefused = errors.New("access denied (injected)")

func (r *refusing) refuse(key string) error {
	if r.match(key) {
		r.attempts.Add(1)
		return errRefused
	}
	return nil
}

func (r *refusing) Put(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := r.refuse(key); err != nil {
		return objstore.Object{}, err
	}
	return r.Store.Put(ctx, key, body)
}

func (r *refusing) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := r.refuse(key); err != nil {
		return objstore.Object{}, err
	}
	return r.Store.PutIfAbsent(ctx, key, body)
}

// A journal that cannot be written refuses the intent (the purge must not
// commit), and every later one without trying the store again.
func TestJournalRefusedStopsEveryIntent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		for what, match := range map[string]func(string) bool{
			"lease":   func(k string) bool { return strings.HasSuffix(k, "/lease") },
			"records": func(k string) bool { return strings.HasSuffix(k, ".json") },
		} {
			r := &refusing{Store: s, match: match}
			jr := ledger.NewJournal(r, "pass-a", t0, ledger.JournalOptions{TTL: journalTTL, Logger: slog.New(slog.DiscardHandler)})
			err := jr.Intent(t.Context(), tableRow("pass-a", "/db", "t", t0), 1, 10, false)
			require.ErrorIs(t, err, ledger.ErrJournal, what)
			require.ErrorContains(t, err, errRefused.Error())
			n := r.attempts.Load()
			err = jr.Intent(t.Context(), tableRow("pass-a", "/db", "u", t0), 1, 10, false)
			require.ErrorIs(t, err, ledger.ErrJournal)
			require.ErrorIs(t, err, ledger.ErrJournalStopped)
			require.Equal(t, n, r.attempts.Load(), "no write tried after the first failure")
			require.NoError(t, jr.Close(t.Context(), true))
		}
	})
}

// A cancelled purge is not a journal failure: the error is the context's.
func TestJournalIntentCancelled(t *testing.T) {
	jr := ledger.NewJournal(memstore.New(), "pass-a", t0, ledger.JournalOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := jr.Intent(ctx, tableRow("pass-a", "/db", "t", t0), 1, 10, false)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ledger.ErrJournal)
	require.NoError(t, jr.Intent(t.Context(), tableRow("pass-a", "/db", "t", t0), 1, 10, false), "the journal still works")
	require.NoError(t, jr.Close(t.Context(), false))
}

// Two passes folding at once: one takes the dead journal's lease, the
// other leaves it (or finds it folded); the rows are folded once.
func TestRecoverConcurrentFoldersFoldOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-dead", t0)
		require.NoError(t, jr.Intent(t.Context(), tableRow("pass-dead", "/db", "t", t0), 1, 10, false))
		j.die()
		type res struct {
			recs []ledger.Recovered
			err  error
		}
		out := make(chan res, 2)
		for _, by := range []string{"pass-x", "pass-y"} {
			go func() {
				recs, err := ledger.Recover(context.Background(), j.clock, by, j.opts(by, nil))
				out <- res{recs, err}
			}()
		}
		folded := 0
		for range 2 {
			r := <-out
			if r.err != nil {
				require.ErrorIs(t, r.err, lock.ErrLocked, "only contention may stop a folder")
			}
			folded += len(r.recs)
		}
		require.Equal(t, 1, folded, "folded once")
		require.Empty(t, keysUnder(t, s, ledger.JournalPrefix))
	})
}

// A journal's lease renews past the pass's pacer, as a table's lease does:
// a store that throttles the pass must not cost it its journal. Records
// are paced like any other request.
func TestJournalLeaseBypassesThePacer(t *testing.T) {
	pacer := retry.NewPacer(0.001) // one request now, the next in 1,000 s
	s, err := ledger.OpenLocation(t.Context(), t.TempDir(), nil, stack.Options{Pacer: pacer, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "journal/pass-a/"+strings.Repeat("0", 32)+".json", []byte("{}")) // spends the one request
	require.NoError(t, err)
	// The deadlines bound the test; the pacer would hold a paced request
	// for 1,000 s.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = s.PutIfAbsent(ctx, "journal/pass-a/lease", []byte("lease"))
	require.NoError(t, err, "the lease is not paced")
	short, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel2()
	_, err = s.Put(short, "journal/pass-a/"+strings.Repeat("1", 32)+".json", []byte("{}"))
	require.Error(t, err, "a record is paced")
}
