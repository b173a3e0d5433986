package worker

// The audit ledger of a whole pass (docs/FORMAT.md): a purge killed right
// after destroying a table still has its row; a ledger that refuses writes
// fails the pass, and a journal that refuses the intent keeps the table;
// the journal of a pass still running is never folded by another.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// auditStore is a fresh ledger location on backend, behind a clock the
// test moves (the store's clock decides when a journal's lease may be
// taken over).
func auditStore(t *testing.T, backend objstoretest.Backend) *objstoretest.ClockStore {
	return objstoretest.NewClockStore(openStack(t, backend.NewRoot(t)))
}

func testLedger(s objstore.Store) *Ledger {
	return NewLedger(s, slog.New(slog.DiscardHandler), "v9", "host-a")
}

// ledgerRowsOf reads the ledger; rows by "pass/table".
func ledgerRowsOf(t *testing.T, s objstore.Store) map[string]ledger.Row {
	t.Helper()
	rows, err := ledger.Read(context.Background(), s, time.Time{})
	require.NoError(t, err)
	out := map[string]ledger.Row{}
	for _, r := range rows {
		k := r.PassID + "/" + r.Table
		_, dup := out[k]
		require.False(t, dup, "two rows for %s: %v", k, rows)
		out[k] = r
	}
	return out
}

// errKilled is what a killed process's ledger store "answers": nothing
// more reaches the store.
var errKilled = errors.New("the process was killed (injected)")

// dying is a ledger store that dies with its process: once dead is set,
// every call fails and reaches nothing.
type dying struct {
	objstore.Store
	dead *atomic.Bool
}

func (d dying) check() error {
	if d.dead.Load() {
		return errKilled
	}
	return nil
}

func (d dying) List(ctx context.Context, p string, fn func(objstore.Page) error) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.List(ctx, p, fn)
}

func (d dying) Walk(ctx context.Context, p string, fn func([]objstore.Object) error) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.Walk(ctx, p, fn)
}

func (d dying) Get(ctx context.Context, k string, limit int64) ([]byte, objstore.Object, error) {
	if err := d.check(); err != nil {
		return nil, objstore.Object{}, err
	}
	return d.Store.Get(ctx, k, limit)
}

func (d dying) Head(ctx context.Context, k string) (objstore.Object, error) {
	if err := d.check(); err != nil {
		return objstore.Object{}, err
	}
	return d.Store.Head(ctx, k)
}

func (d dying) Put(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if err := d.check(); err != nil {
		return objstore.Object{}, err
	}
	return d.Store.Put(ctx, k, b)
}

func (d dying) PutIfAbsent(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if err := d.check(); err != nil {
		return objstore.Object{}, err
	}
	return d.Store.PutIfAbsent(ctx, k, b)
}

func (d dying) PutIfMatch(ctx context.Context, k string, b []byte, etag string) (objstore.Object, error) {
	if err := d.check(); err != nil {
		return objstore.Object{}, err
	}
	return d.Store.PutIfMatch(ctx, k, b, etag)
}

func (d dying) Delete(ctx context.Context, k string) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.Delete(ctx, k)
}

func (d dying) DeleteIfMatch(ctx context.Context, k, etag string) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.DeleteIfMatch(ctx, k, etag)
}

func (d dying) DeleteBatch(ctx context.Context, keys []string) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.DeleteBatch(ctx, keys)
}

func (d dying) Now(ctx context.Context) (time.Time, error) {
	if err := d.check(); err != nil {
		return time.Time{}, err
	}
	return d.Store.Now(ctx)
}

func (d dying) PruneEmpty(ctx context.Context, p string) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.PruneEmpty(ctx, p)
}

// killAfterMarkerDelete is a root store that sets dead once name's marker
// is deleted: the table is destroyed, and the process dies right after.
type killAfterMarkerDelete struct {
	objstore.Store
	name string
	dead *atomic.Bool
}

func (k killAfterMarkerDelete) DeleteIfMatch(ctx context.Context, key, etag string) error {
	err := k.Store.DeleteIfMatch(ctx, key, etag)
	if err == nil && key == lifecycle.MarkerKey(k.name) {
		k.dead.Store(true)
	}
	return err
}

// A pass killed right after it destroyed a table (its marker deleted,
// before its outcome, its file or anything else reached the ledger)
// loses no row: `reaper audit` reads the table's intent from the journal
// at once (unfinished: it may be partly or fully purged), and the next
// pass, finding the table's marker and directory both gone, folds it into
// the ledger as purged, marked recovered, saying only the outcome was
// lost. Before, the folded row said failed, unfinished.
func TestLedgerRowSurvivesAKillAfterTheTableIsDestroyed(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "doomed", 3, 1, 7*day)
		objects := len(f.keys(0, "doomed.lance/"))
		audit := auditStore(t, backend)
		var dead atomic.Bool
		f.stores[f.uris[0]] = killAfterMarkerDelete{Store: f.store(0), name: "doomed", dead: &dead}
		a := f.worker(baseConfig(), 8*day)
		a.Ledger = testLedger(dying{Store: audit, dead: &dead})
		repA, err := a.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "purged/due", byTable(repA, 0)["doomed"])
		require.True(t, dead.Load(), "the kill point was reached")
		require.Empty(t, f.keys(0, "doomed."), "the table is destroyed")

		rows := ledgerRowsOf(t, audit)
		got, ok := rows[repA.PassID+"/doomed"]
		require.True(t, ok, "no row of the killed pass for the destroyed table: %v", rows)
		require.True(t, got.Pending, "read from the journal")
		require.Equal(t, string(outcome.Failed), got.Action)
		require.True(t, strings.HasPrefix(got.Reason, string(outcome.ReasonUnfinished)+": "), got.Reason)

		// The next pass, once the dead pass's journal lease may be taken
		// over by the store's clock, folds it.
		audit.Advance(time.Hour)
		b := f.worker(baseConfig(), 8*day+time.Hour)
		b.Ledger = testLedger(audit)
		repB, err := b.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Empty(t, repB.LedgerErrors)
		got = ledgerRowsOf(t, audit)[repA.PassID+"/doomed"]
		require.Equal(t, repB.PassID, got.RecoveredBy, "folded by the next pass")
		require.False(t, got.Pending)
		require.Equal(t, string(outcome.Purged), got.Action, "%+v", got)
		require.True(t, strings.HasPrefix(got.Reason, string(outcome.ReasonDue)+": recovered: "), got.Reason)
		require.Contains(t, got.Reason, "marker and directory were both gone")
		require.Contains(t, got.Reason, fmt.Sprintf("intent to purge %d object(s)", objects))
		require.Empty(t, got.Error)
		require.Equal(t, int64(objects), got.Objects)
		require.Empty(t, journalKeys(t, audit), "the folded journal is gone")
	}, objstoretest.Shared()...)
}

// killAtFirstBatch is a root store that sets dead at name's first delete
// batch, before it reaches the store: the purge committed and the process
// dies with the table whole.
type killAtFirstBatch struct {
	objstore.Store
	name string
	dead *atomic.Bool
}

func (k killAtFirstBatch) DeleteBatch(ctx context.Context, keys []string) error {
	if len(keys) > 0 && strings.HasPrefix(keys[0], lifecycle.TableDir(k.name)) && k.dead.CompareAndSwap(false, true) {
		return errKilled
	}
	return k.Store.DeleteBatch(ctx, keys)
}

// A pass killed after its purge committed, the table still there, folds
// as before: failed, unfinished, the table partly or fully purged; the
// next pass then finishes the table with a purged row of its own.
func TestLedgerRowOfAKilledPurgeOfATableStillThere(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "cut", 3, 1, 7*day)
		audit := auditStore(t, backend)
		var dead atomic.Bool
		f.stores[f.uris[0]] = killAtFirstBatch{Store: f.store(0), name: "cut", dead: &dead}
		a := f.worker(baseConfig(), 8*day)
		a.Ledger = testLedger(dying{Store: audit, dead: &dead})
		repA, err := a.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.True(t, dead.Load(), "the kill point was reached")
		require.NotEmpty(t, f.keys(0, "cut.lance/"), "the table is still there")

		audit.Advance(time.Hour)
		b := f.worker(baseConfig(), 8*day+time.Hour) // its batches pass: the kill was once
		b.Ledger = testLedger(audit)
		repB, err := b.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Empty(t, repB.LedgerErrors)
		rows := ledgerRowsOf(t, audit)
		got := rows[repA.PassID+"/cut"]
		require.Equal(t, repB.PassID, got.RecoveredBy)
		require.Equal(t, string(outcome.Failed), got.Action, "%+v", got)
		require.True(t, strings.HasPrefix(got.Reason, string(outcome.ReasonUnfinished)+": "), got.Reason)
		require.Contains(t, got.Error, "partly or fully purged")
		require.Equal(t, string(outcome.Purged), rows[repB.PassID+"/cut"].Action, "the next pass finishes it")
	}, objstoretest.Shared()...)
}

func journalKeys(t *testing.T, s objstore.Store) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.Walk(context.Background(), ledger.JournalPrefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}

// refuseWrites fails the writes of keys it matches (a bucket policy, a
// full disk), counting them.
type refuseWrites struct {
	objstore.Store
	match func(key string) bool
	n     *atomic.Int64
}

var errDenied = errors.New("access denied (injected)")

func (r refuseWrites) Put(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if r.match(k) {
		r.n.Add(1)
		return objstore.Object{}, errDenied
	}
	return r.Store.Put(ctx, k, b)
}

func (r refuseWrites) PutIfAbsent(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if r.match(k) {
		r.n.Add(1)
		return objstore.Object{}, errDenied
	}
	return r.Store.PutIfAbsent(ctx, k, b)
}

// ledgerFailures reads reaper_ledger_write_failures_total and the pass's
// result from reg.
func ledgerMetrics(t *testing.T, reg *prometheus.Registry) (failures float64, results map[string]float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "reaper_ledger_write_failures_total" {
			failures = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return failures, counters(t, reg, "result")
}

// A journal that refuses the intent keeps every due table (failed,
// ledger: nothing committed or deleted), fails the pass and is counted.
func TestLedgerJournalRefusedKeepsTheTables(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "a", 2, 1, 7*day)
		f.table(0, "b", 2, 1, 7*day)
		before := f.keys(0, "")
		var n atomic.Int64
		audit := auditStore(t, backend)
		reg := prometheus.NewRegistry()
		w := f.worker(baseConfig(), 8*day)
		w.Observer = MetricsObserver{M: metrics.New(reg, metrics.Options{})}
		w.Ledger = testLedger(refuseWrites{Store: audit, n: &n, match: func(k string) bool { return strings.HasPrefix(k, ledger.JournalPrefix) }})
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"a": "failed/ledger", "b": "failed/ledger"}, byTable(rep, 0))
		require.Equal(t, before, f.keys(0, ""), "nothing committed or deleted (the leases released)")
		require.Equal(t, int64(1), n.Load(), "the second table does not try the refusing store again")
		require.Equal(t, outcome.ResultPartial, rep.Result())
		require.Len(t, rep.LedgerErrors, 1)
		failures, results := ledgerMetrics(t, reg)
		require.Equal(t, 1.0, failures)
		require.Equal(t, 1.0, results["reaper_passes_total{partial}"])
		require.Equal(t, 2.0, counters(t, reg, "reason")["reaper_purge_failures_total{ledger}"])

		// The pass's file, written to a healthy prefix, says so.
		rows := ledgerRowsOf(t, audit)
		require.Equal(t, string(outcome.Failed), rows[rep.PassID+"/a"].Action)
		require.True(t, strings.HasPrefix(rows[rep.PassID+"/a"].Reason, "ledger: "))
	}, objstoretest.Shared()...)
}

// A pass whose file cannot be written is not a success: counted, partial.
// Its journal stays, and the next pass folds the purges it recorded.
func TestLedgerFileRefusedFailsThePass(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "a", 2, 1, 7*day)
		var n atomic.Int64
		audit := auditStore(t, backend)
		reg := prometheus.NewRegistry()
		w := f.worker(baseConfig(), 8*day)
		w.Observer = MetricsObserver{M: metrics.New(reg, metrics.Options{})}
		w.Ledger = testLedger(refuseWrites{Store: audit, n: &n, match: func(k string) bool { return strings.HasPrefix(k, ledger.Prefix) }})
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "purged/due", byTable(rep, 0)["a"])
		require.Equal(t, outcome.ResultPartial, rep.Result(), "a lost audit record is not a success")
		failures, results := ledgerMetrics(t, reg)
		require.Equal(t, 1.0, failures)
		require.Equal(t, 1.0, results["reaper_passes_total{partial}"])
		require.Zero(t, results["reaper_passes_total{success}"])

		next := f.worker(baseConfig(), 8*day)
		next.Ledger = testLedger(audit)
		repN, err := next.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Empty(t, repN.LedgerErrors)
		got := ledgerRowsOf(t, audit)[rep.PassID+"/a"]
		require.Equal(t, string(outcome.Purged), got.Action, "the recorded outcome, folded")
		require.Equal(t, repN.PassID, got.RecoveredBy)
	}, objstoretest.Shared()...)
}

// The journal of a pass still running (frozen just before its commit, its
// intent recorded) is never folded by a pass that starts meanwhile: once
// it resumes and ends, its own file holds the table's one row.
func TestLedgerRunningPassIsNotFolded(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "t", 2, 1, 7*day)
		audit := auditStore(t, backend)
		p := f.pausePass()
		frozen := p.PauseBefore(objstoretest.OpPutIfAbsent, lifecycle.CommitKey("t"), 0)
		a := f.worker(baseConfig(), 8*day)
		a.Ledger = testLedger(audit)
		done := passAsync(t, a)
		<-frozen.Reached()
		journal := journalKeys(t, audit)
		require.Len(t, journal, 2, "A's lease and its intent: %v", journal)

		b := f.worker(baseConfig(), 8*day)
		b.Ledger = testLedger(audit)
		repB, err := b.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "skipped/locked", byTable(repB, 0)["t"])
		require.Empty(t, repB.LedgerErrors)
		require.Equal(t, journal, journalKeys(t, audit), "B left A's journal alone")

		frozen.Release()
		repA := <-done
		require.Equal(t, "purged/due", byTable(repA, 0)["t"])
		require.Empty(t, repA.LedgerErrors)
		got := ledgerRowsOf(t, audit)[repA.PassID+"/t"]
		require.Equal(t, string(outcome.Purged), got.Action)
		require.Empty(t, got.RecoveredBy, "A's own row, never folded")
		require.False(t, got.Pending)
		require.Empty(t, journalKeys(t, audit))
	}, objstoretest.Shared()...)
}

// A pass frozen past its leases (the table's and the journal's) resumes
// in a purge's walk: the table's row says lease_lost, not ledger, though
// the journal's lease is lost too.
func TestLedgerFrozenPassReportsTheLostTableLease(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "a", 2, 1, 6*day) // due first: its intent takes the journal's lease
		f.table(0, "b", 2, 1, 7*day)
		audit := auditStore(t, backend)
		p := f.pausePass()
		frozen := p.PauseBefore(objstoretest.OpWalkStart, "b.lance/", 0)
		var skew atomic.Int64
		cfg := baseConfig()
		cfg.Limits.TableConcurrency = 1
		w := f.worker(cfg, 8*day)
		w.Ledger = testLedger(audit)
		w.LeaseClock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		done := passAsync(t, w)
		<-frozen.Reached()
		skew.Store(int64(2 * cfg.Defaults.LeaseTTL.D())) // frozen past both leases
		frozen.Release()
		rep := <-done
		require.Equal(t, map[string]string{"a": "purged/due", "b": "failed/lease_lost"}, byTable(rep, 0))
		require.NotEmpty(t, f.keys(0, "b.lance/"), "b keeps its data")
	}, objstoretest.Shared()...)
}
