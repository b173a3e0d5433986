package reaper_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/stack"
)

// facadeRoot is one database root the public API opens.
type facadeRoot struct {
	objstoretest.Root
	// clockSlack is how far two readers of the store's clock may disagree:
	// an S3 clock is read from Date headers of second precision, which
	// versitygw refreshes once a second, and may be lifted by an object's
	// Last-Modified; a local clock is the kernel's.
	clockSlack time.Duration
}

// forEachRoot runs fn on the stores the public API is tested on: a local
// directory and a bucket of each object-store test server.
func forEachRoot(t *testing.T, fn func(t *testing.T, newRoot func(t *testing.T) facadeRoot)) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		fn(t, func(t *testing.T) facadeRoot {
			r := facadeRoot{Root: b.NewRoot(t)}
			if r.Dir == "" { // a bucket store's clock reads to the second
				r.clockSlack = 2 * time.Second
			}
			return r
		})
	}, objstoretest.Shared()...)
}

// writeTable writes a Lance-shaped table of n data files into the root and
// returns its object count.
func writeTable(t *testing.T, r facadeRoot, name string, n int) int64 {
	t.Helper()
	return int64(lancetest.Small(n).Put(t, r.Open(t), name+".lance/"))
}

// dropDue drops tables with a 1ms TTL and returns once the store's own
// clock (the one due-ness is judged by) has passed their purge time by the
// root's clock slack, as a freshly opened root reads it.
func dropDue(t *testing.T, ns *reaper.Namespace, r facadeRoot, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		_, err := ns.Drop(ctx, name, time.Millisecond)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		fresh := openFacade(t, r)
		st, err := fresh.Status(ctx, names...)
		if err != nil {
			return false
		}
		now, err := fresh.StoreNow(ctx)
		if err != nil {
			return false
		}
		for _, s := range st {
			if !s.Due(now.Add(-r.clockSlack)) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "%v never became due by the store clock", names)
}

func openFacade(t *testing.T, r facadeRoot) *reaper.Namespace {
	t.Helper()
	ns, err := reaper.Open(context.Background(), r.URI, reaper.Options{StorageOptions: r.Options})
	require.NoError(t, err)
	return ns
}

// A caller purges one table, watches its progress, and cancels it part way:
// the purge stops at a batch boundary with context.Canceled, the table is
// left finishable (never live, never not_found with data behind), and the
// next purge finishes it, counting only what was left.
func TestPurgeProgressAndCancellation(t *testing.T) {
	forEachRoot(t, func(t *testing.T, mk func(t *testing.T) facadeRoot) {
		{
			r := mk(t)
			// Two delete batches at least: the manifest goes alone, first,
			// and its progress call cancels. (A table of thousands only
			// made the emulators the test's whole time.)
			files := writeTable(t, r, "events", 200)
			ns := openFacade(t, r)
			dropDue(t, ns, r, "events")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var seen []int64
			_, err := ns.Purge(ctx, "events", reaper.PurgeOptions{AllowShortTTL: true, Progress: func(objects, _ int64) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, objects)
				cancel() // the caller gives up after the first batch
			}})
			require.ErrorIs(t, err, context.Canceled)
			require.NotEmpty(t, seen, "progress was never reported")
			first := seen[0]
			require.Less(t, first, files, "the first batch cannot have deleted everything")

			st, err := ns.Status(context.Background(), "events")
			require.NoError(t, err)
			require.Contains(t, []reaper.State{reaper.StateSoftDeleted, reaper.StatePartiallyPurged}, st[0].State)

			res, err := ns.Purge(context.Background(), "events", reaper.PurgeOptions{AllowShortTTL: true})
			require.NoError(t, err)
			require.Equal(t, reaper.OutcomePurged, res.Outcome)
			require.Equal(t, files, first+res.Objects, "the second purge deleted exactly what the first left")
			st, err = ns.Status(context.Background(), "events")
			require.NoError(t, err)
			require.Equal(t, reaper.StateNotFound, st[0].State)
		}
	})
}

// Every state a caller branches on has a sentinel (errors.Is) and, where
// there is more to say, a type (errors.As).
func TestTypedErrors(t *testing.T) {
	forEachRoot(t, func(t *testing.T, mk func(t *testing.T) facadeRoot) {
		{
			ctx := context.Background()
			r := mk(t)
			writeTable(t, r, "live", 1)
			writeTable(t, r, "later", 1)
			writeTable(t, r, "held", 1)
			ns := openFacade(t, r)

			_, err := ns.Drop(ctx, "missing", 0)
			require.ErrorIs(t, err, reaper.ErrNotFound)
			_, err = ns.Drop(ctx, "a/b", 0)
			require.ErrorIs(t, err, reaper.ErrInvalidName)
			require.ErrorIs(t, ns.Revive(ctx, "live"), reaper.ErrNotSoftDeleted)

			_, err = ns.Drop(ctx, "later", time.Hour)
			require.NoError(t, err)
			_, err = ns.Drop(ctx, "later", time.Hour)
			require.ErrorIs(t, err, reaper.ErrAlreadyDeleted)
			_, err = ns.Purge(ctx, "later", reaper.PurgeOptions{})
			require.ErrorIs(t, err, reaper.ErrNotPurgeable)
			var nd *reaper.NotDueError
			require.ErrorAs(t, err, &nd)
			require.Equal(t, "later", nd.Name)

			_, err = ns.Hold(ctx, "held", "case 42")
			require.NoError(t, err)
			_, err = ns.Hold(ctx, "held", "again")
			require.ErrorIs(t, err, reaper.ErrHeld)
			dropDue(t, ns, r, "held")
			_, err = ns.Purge(ctx, "held", reaper.PurgeOptions{})
			require.ErrorIs(t, err, reaper.ErrHeld)
			require.NoError(t, ns.Release(ctx, "held"))
			require.ErrorIs(t, ns.Release(ctx, "held"), reaper.ErrNotFound)

			s := r.Open(t)
			_, err = s.Put(ctx, "_reaper/PAUSE", []byte("incident 7"))
			require.NoError(t, err)
			// dropDue's 1ms TTL is below the TTL floor.
			_, err = ns.Purge(ctx, "held", reaper.PurgeOptions{AllowShortTTL: true})
			require.ErrorIs(t, err, reaper.ErrPaused)
			require.NoError(t, s.Delete(ctx, "_reaper/PAUSE"))
			res, err := ns.Purge(ctx, "held", reaper.PurgeOptions{AllowShortTTL: true})
			require.NoError(t, err)
			require.Equal(t, reaper.OutcomePurged, res.Outcome)
		}
	})
}

// PurgeRoots is `reaper purge` for a service: every rail applies, every
// decision reaches the callback, and the report says what happened.
func TestPurgeRoots(t *testing.T) {
	forEachRoot(t, func(t *testing.T, mk func(t *testing.T) facadeRoot) {
		{
			ctx := context.Background()
			a, b := mk(t), mk(t)
			writeTable(t, a, "due", 3)
			writeTable(t, a, "kept", 1)
			writeTable(t, b, "also_due", 2)
			writeTable(t, b, "held", 1)
			nsA, nsB := openFacade(t, a), openFacade(t, b)
			_, err := nsA.Drop(ctx, "kept", 30*24*time.Hour)
			require.NoError(t, err)
			_, err = nsB.Hold(ctx, "held", "litigation")
			require.NoError(t, err)
			for _, n := range []string{"held", "also_due"} {
				_, err = nsB.Drop(ctx, n, time.Millisecond)
				require.NoError(t, err)
			}
			dropDue(t, nsA, a, "due") // by when the others are due too

			var mu sync.Mutex
			got := map[string]reaper.Action{}
			rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
				Roots: []reaper.Root{{URI: a.URI, StorageOptions: a.Options}, {URI: b.URI, StorageOptions: b.Options}},
				// The markers' 1ms TTL is below safety.min_ttl (1h).
				Settings: map[string]string{"safety.allow_short_ttl": "true"},
				OnDecision: func(d reaper.Decision) {
					mu.Lock()
					defer mu.Unlock()
					got[d.Table] = d.Action
				},
			})
			require.NoError(t, err)
			require.Equal(t, map[string]reaper.Action{
				"due": reaper.ActionPurged, "also_due": reaper.ActionPurged,
				"kept": reaper.ActionSkipped, "held": reaper.ActionHeld,
			}, got)
			require.Len(t, rep.Roots, 2)
			require.Equal(t, 2, rep.Totals().Purged)
			for ns, tables := range map[*reaper.Namespace][]string{nsA: {"due"}, nsB: {"also_due"}} {
				st, err := ns.Status(ctx, tables...)
				require.NoError(t, err)
				require.Equal(t, reaper.StateNotFound, st[0].State)
			}
			st, err := nsB.Status(ctx, "held")
			require.NoError(t, err)
			require.Equal(t, reaper.StateSoftDeleted, st[0].State)
		}
	})
}

// Without the opt-in, the minimum-TTL rail of the CLI holds for a service
// too; bad options name the input and the fix.
func TestPurgeRootsRailsAndBadOptions(t *testing.T) {
	ctx := context.Background()
	r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
	writeTable(t, r, "short", 1)
	ns := openFacade(t, r)
	dropDue(t, ns, r, "short")
	rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{Roots: []reaper.Root{{URI: r.URI}}})
	require.NoError(t, err)
	require.Len(t, rep.Roots, 1)
	require.Len(t, rep.Roots[0].Decisions, 1)
	require.Equal(t, reaper.ActionSkipped, rep.Roots[0].Decisions[0].Action)
	st, err := ns.Status(ctx, "short")
	require.NoError(t, err)
	require.Equal(t, reaper.StateSoftDeleted, st[0].State)

	for _, tc := range []struct {
		name string
		opts reaper.PassOptions
		want string
	}{
		{"no roots", reaper.PassOptions{}, "set PassOptions.Roots"},
		{"unknown key", reaper.PassOptions{Roots: []reaper.Root{{URI: r.URI}}, Settings: map[string]string{"limits.table_concurency": "2"}}, "limits.table_concurrency"},
		{"bad value", reaper.PassOptions{Roots: []reaper.Root{{URI: r.URI}}, Settings: map[string]string{"limits.table_concurrency": "many"}}, "limits.table_concurrency"},
		{"bad table", reaper.PassOptions{Roots: []reaper.Root{{URI: r.URI}}, Tables: []string{"../x"}}, "invalid table name"},
		{"relative root", reaper.PassOptions{Roots: []reaper.Root{{URI: "data/db"}}}, "relative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reaper.PurgeRoots(ctx, tc.opts)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	require.False(t, errors.Is(err, context.Canceled))
}

// A service's pass reports what the CLI's does: metrics in the caller's
// registry and a row per decision in the audit ledger.
func TestPurgeRootsMetricsAndLedger(t *testing.T) {
	ctx := context.Background()
	r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
	objects := writeTable(t, r, "events", 3)
	writeTable(t, r, "users", 1)
	dropDue(t, openFacade(t, r), r, "events")
	audit := filepath.Join(t.TempDir(), "audit")

	reg := prometheus.NewRegistry()
	rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
		Roots:      []reaper.Root{{URI: r.URI}},
		Settings:   map[string]string{"safety.allow_short_ttl": "true", "audit.location": audit},
		Registerer: reg,
	})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Totals().Purged)
	require.Equal(t, 1.0, metricSum(t, reg, "reaper_tables_purged_total"))
	require.Equal(t, float64(objects), metricSum(t, reg, "reaper_objects_deleted_total"))

	as, err := local.Open(audit)
	require.NoError(t, err)
	rows, err := ledger.Read(ctx, as, time.Time{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "events", rows[0].Table)
	require.Equal(t, string(reaper.ActionPurged), rows[0].Action)
}

// metricSum adds up every series of the counter name in reg.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// PurgeRoots with retention switched on in its settings also cleans the
// live tables of its roots, and reports them per root and in its totals.
func TestPurgeRootsRetainsLiveTables(t *testing.T) {
	forEachRoot(t, func(t *testing.T, mk func(t *testing.T) facadeRoot) {
		ctx := context.Background()
		r := mk(t)
		st := r.Open(t)
		before := lancetest.LanceDB(t, st, "events.lance/")
		// The table was written just now, and a version goes only when the
		// store wrote it before the cutoff too: the pass runs with the
		// store's clock two hours ahead.
		clock := objstoretest.NewClock()
		clock.Advance(2 * time.Hour)
		ctx = stack.WithWrapBackend(ctx, func(s objstore.Store) objstore.Store { return clock.Wrap(s) })
		rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
			Roots:    []reaper.Root{{URI: r.URI, StorageOptions: r.Options}},
			Settings: map[string]string{"retention.enabled": "true", "retention.older_than": "1h"},
		})
		require.NoError(t, err)
		require.Equal(t, reaper.PassResult("success"), rep.Result())
		require.Len(t, rep.Roots[0].Retention, 1)
		d := rep.Roots[0].Retention[0]
		require.Equal(t, "events", d.Table)
		require.Equal(t, reaper.ActionCleaned, d.Action)
		require.Positive(t, d.VersionsRemoved)
		tot := rep.Totals()
		require.Equal(t, 1, tot.Cleaned)
		require.Equal(t, d.Objects, tot.RetentionObjects)
		require.Zero(t, tot.Objects, "nothing was purged")
		var left int
		require.NoError(t, st.Walk(ctx, "events.lance/", func(objs []objstore.Object) error { left += len(objs); return nil }))
		require.Equal(t, len(before)-int(d.Objects), left)
	})
}
