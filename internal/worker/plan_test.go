package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// randomRoot writes n names of every kind a plan tells apart (live, due,
// not due, orphan marker, invalid marker, held, busy), named so that some
// start others ("t1", "t1-x", "t1.x").
func randomRoot(f *fixture, r *rand.Rand, n int) {
	ctx := context.Background()
	s := f.store(0)
	put := func(key, body string) {
		_, err := s.Put(ctx, key, []byte(body))
		require.NoError(f.t, err, key)
	}
	for i := range n {
		name := fmt.Sprintf("t%d%s", r.IntN(n/3+1), []string{"", "-x", ".x", "_x"}[r.IntN(4)])
		if _, err := s.Head(ctx, lifecycle.TableDir(name)+"_versions/1.manifest"); err == nil {
			continue
		}
		if _, err := s.Head(ctx, lifecycle.MarkerKey(name)); err == nil {
			continue
		}
		switch i % 7 {
		case 0:
			f.table(0, name, 1, 0, 0)
		case 1:
			f.table(0, name, 1, 1, day)
		case 2:
			f.table(0, name, 1, 1, 30*day)
		case 3:
			f.table(0, name, 1, 0, 0)
			put(lifecycle.MarkerKey(name), "not json")
		case 4:
			f.table(0, name, 1, 1, 30*day)
			put(lifecycle.HoldKey(name), `{"reason":"case 7"}`)
		case 5:
			f.table(0, name, 1, 1, 30*day)
			put(lifecycle.LockKey(name), "not a lease")
		case 6:
			put(lifecycle.MarkerKey(name), string(lifecycle.EncodeMarker(f.now, 30*day)))
		}
	}
}

// TestPassDecidesAsItsPlan: on random roots, a pass (dry run) records the
// decisions the plan of the same root calls for, in the order a pass
// always has (held, invalid, busy, then not due, each by name), its
// summary counts the plan, and its report yields every not-due decision
// from its compact records as the observers received it.
func TestPassDecidesAsItsPlan(t *testing.T) {
	for seed := range 5 {
		f := newFixture(t, objstoretest.Memory, 1)
		randomRoot(f, rand.New(rand.NewPCG(uint64(seed), 12)), 150)
		at := 8 * day
		cfg := baseConfig()
		cfg.DryRun = true
		w := f.worker(cfg, at)
		ns, err := lifecycle.New(f.store(0), lifecycle.Options{})
		require.NoError(t, err)
		plan, err := ns.PlanPurge(context.Background(), time.Time{})
		require.NoError(t, err)

		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		rr := rep.Roots[0]
		require.NoError(t, rr.Err)

		var want []Decision
		for _, s := range plan.Held {
			want = append(want, Decision{Table: s.Name, Action: outcome.Held, Reason: outcome.ReasonHeld, Detail: "legal hold: " + s.Hold.Reason, Status: s})
		}
		for _, s := range plan.Invalid {
			want = append(want, Decision{Table: s.Name, Action: outcome.Failed, Reason: outcome.ReasonInvalidMarker, Detail: s.Problem, Status: s})
		}
		for _, s := range plan.Busy {
			want = append(want, Decision{Table: s.Name, Action: outcome.Skipped, Reason: outcome.ReasonLocked, Detail: "lease held by " + s.Lease.Owner, Status: s})
		}
		for _, s := range plan.NotDue {
			want = append(want, Decision{Table: s.Name, Action: outcome.Skipped, Reason: outcome.ReasonNotDue,
				Detail: "not due until " + s.PurgeAfter.UTC().Format(time.RFC3339), Status: s})
		}
		require.NotEmpty(t, plan.Due)
		require.NotEmpty(t, plan.NotDue)
		got := f.rec.decisions[:len(want)]
		strip := func(ds []Decision) []Decision {
			out := make([]Decision, len(ds))
			for i, d := range ds {
				d.Root, d.Started, d.Finished = "", time.Time{}, time.Time{}
				if d.Reason == outcome.ReasonNotDue || d.Action == outcome.DryRun {
					d.Status = asReported(d.Status) // kept compactly
				}
				out[i] = d
			}
			return out
		}
		require.Equal(t, strip(want), strip(got), "seed %d: the plan's decisions, in order", seed)
		for _, d := range f.rec.decisions[len(want):] {
			require.Equal(t, outcome.DryRun, d.Action, "seed %d: %s: the rest are the due tables", seed, d.Table)
		}
		require.Len(t, f.rec.decisions, len(want)+len(plan.Due))

		// The report keeps the not-due decisions compactly and yields them
		// as they were made.
		require.Equal(t, len(plan.NotDue), rr.RoutineLen())
		for _, d := range rr.Decisions {
			require.NotEqual(t, outcome.ReasonNotDue, d.Reason, "%s: a not-due decision kept whole", d.Table)
		}
		var fromReport []Decision
		for d := range rr.Routine() {
			fromReport = append(fromReport, d)
		}
		made := f.rec.decisions[len(want)-len(plan.NotDue) : len(want)]
		require.Equal(t, strip(made), strip(fromReport), "seed %d", seed)
		for i, d := range fromReport {
			require.True(t, made[i].Started.Equal(d.Started) && made[i].Finished.Equal(d.Finished), "%s: times", d.Table)
			require.Equal(t, rr.Root, d.Root)
		}
		var done []Decision
		for d := range rr.Done() {
			done = append(done, d)
		}
		// The report and the observers each record a table as it finishes,
		// the report under its lock and the observers after it: two tables
		// finishing together may come in either order to each.
		require.ElementsMatch(t, strip(f.rec.decisions[len(want):]), strip(done), "seed %d: the dry runs, each as the observers received it", seed)
		n := 0
		for range rr.All() {
			n++
		}
		require.Equal(t, len(f.rec.decisions), n, "All yields every decision")
		require.Equal(t, len(plan.NotDue)+len(plan.Busy), rep.Totals().Skipped)

		require.Equal(t, summaryOf(plan), rr.Plan, "seed %d: the summary counts the plan", seed)
	}
}

// asReported is a status as a report's brief keeps it: no marker
// LastModified or ETag, times as instants (no monotonic reading).
func asReported(s lifecycle.TableStatus) lifecycle.TableStatus {
	s.MarkerModified, s.MarkerETag = time.Time{}, ""
	s.PurgeAfter = time.Unix(s.PurgeAfter.Unix(), int64(s.PurgeAfter.Nanosecond()))
	s.DeletedAt = time.Unix(s.DeletedAt.Unix(), int64(s.DeletedAt.Nanosecond()))
	return s
}

// summaryOf counts a plan as a pass's summary always has.
func summaryOf(p lifecycle.Plan) PlanSummary {
	var s PlanSummary
	for _, l := range [][]lifecycle.TableStatus{p.NotDue, p.Invalid, p.Busy, p.Held, p.Due, p.Live} {
		for _, st := range l {
			s.count(st)
		}
	}
	s.Held = len(p.Held)
	due := &dueList{def: lifecycle.DefaultTTL}
	for _, st := range p.Due {
		due.add(st)
	}
	s.countDue(due, p.Now)
	return s
}

// TestNotDueWithAProblemIsKeptWhole: a not-due table whose plan carries a
// problem (here a stale purge commit) keeps its whole status in
// Decisions, between its neighbours' not-due decisions by name.
func TestNotDueWithAProblemIsKeptWhole(t *testing.T) {
	f := newFixture(t, objstoretest.Memory, 1)
	for _, n := range []string{"a", "b", "c"} {
		f.table(0, n, 1, 1, 30*day)
	}
	_, err := f.store(0).Put(context.Background(), lifecycle.CommitKey("b"), []byte(`{"marker":"other"}`))
	require.NoError(t, err)
	rep, err := f.worker(baseConfig(), day).Pass(context.Background(), nil)
	require.NoError(t, err)
	var order []string
	for _, d := range f.rec.decisions {
		order = append(order, d.Table+"/"+string(d.Reason))
	}
	require.Equal(t, []string{"a/not_due", "b/not_due", "c/not_due"}, order)
	rr := rep.Roots[0]
	require.Len(t, rr.Decisions, 1)
	require.Equal(t, "b", rr.Decisions[0].Table)
	require.True(t, strings.Contains(rr.Decisions[0].Status.Problem, lifecycle.CommitKey("b")), rr.Decisions[0].Status.Problem)
	require.Equal(t, 2, rr.RoutineLen())
}

// TestRoutineDecisionsAreKeptCompactly: decisions that did no work and
// say the same of many tables (a paused root, a blast radius refusal, the
// pass's table limit), and completed purges, are kept as briefs:
// Decisions holds none of them, Routine (by name) and Done yield each as
// the observers received it, and the totals count them.
func TestRoutineDecisionsAreKeptCompactly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture)
		cfg    func(c *config.Config)
		reason outcome.Reason
		action outcome.Action
		done   int // tables purged (Done)
	}{
		{"paused", func(f *fixture) {
			_, err := f.store(0).Put(context.Background(), PauseKey, nil)
			require.NoError(f.t, err)
		}, nil, outcome.ReasonPaused, outcome.Skipped, 0},
		{"blast radius", nil, func(c *config.Config) { c.Safety.BlastRadiusMaxTables = 2 }, outcome.ReasonBlastRadius, outcome.Refused, 0},
		{"limit", nil, func(c *config.Config) { c.Limits.MaxTablesPerPass = 2 }, outcome.ReasonLimit, outcome.Skipped, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Memory, 1)
			for _, n := range []string{"e", "a", "d", "b", "c"} {
				f.table(0, n, 1, 1, day)
			}
			if tc.setup != nil {
				tc.setup(f)
			}
			cfg := baseConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			rep, err := f.worker(cfg, 2*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			rr := rep.Roots[0]
			require.Empty(t, rr.Decisions, "every decision kept compactly")
			var routine []Decision
			for d := range rr.Routine() {
				routine = append(routine, d)
			}
			require.Len(t, routine, 5-tc.done)
			var done []Decision
			for d := range rr.Done() {
				require.Equal(t, outcome.Purged, d.Action, d.Table)
				done = append(done, d)
			}
			require.Len(t, done, tc.done)
			var names []string
			for _, d := range routine {
				names = append(names, d.Table)
				require.Equal(t, tc.reason, d.Reason, d.Table)
				require.Equal(t, tc.action, d.Action, d.Table)
			}
			require.IsIncreasing(t, names, "by name")
			// As the observers received them.
			made := map[string]Decision{}
			for _, d := range f.rec.decisions {
				d.Status = asReported(d.Status)
				made[d.Table] = d
			}
			for _, d := range append(routine, done...) {
				m := made[d.Table]
				require.True(t, m.Started.Equal(d.Started) && m.Finished.Equal(d.Finished), d.Table)
				m.Started, m.Finished, d.Started, d.Finished = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				d.Status = asReported(d.Status)
				require.Equal(t, m, d)
			}
			tot := rep.Totals()
			require.Equal(t, 5-tc.done, tot.Skipped+tot.Refused)
			require.Equal(t, tc.done, tot.Purged)
			if tc.done == 0 {
				require.Equal(t, rr.Plan, rr.After(), "nothing purged: the backlog is the plan")
			}
		})
	}
}
