package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

const day = 24 * time.Hour

// fixture is a set of roots with a controllable clock: the stores' clocks
// (objstoretest.ClockStore) and the worker's move together.
type fixture struct {
	t      *testing.T
	stores map[string]objstore.Store
	clocks []*objstoretest.ClockStore
	uris   []string
	now    time.Time
	rec    *recorder
}

// newFixture makes roots fresh roots on backend (objstoretest.Local or
// objstoretest.S3Store; tests run on objstoretest.ForEachBackend with Shared()).
func newFixture(t *testing.T, backend objstoretest.Backend, roots int) *fixture {
	f := &fixture{t: t, stores: map[string]objstore.Store{}, now: time.Now(), rec: &recorder{}}
	for range roots {
		s := openStack(t, backend.NewRoot(t))
		cs := objstoretest.NewClockStore(s)
		f.stores[s.URI()] = cs
		f.clocks = append(f.clocks, cs)
		f.uris = append(f.uris, s.URI())
	}
	sort.Strings(f.uris)
	return f
}

// openStack opens r as the CLI does, through the retry layer, so that a
// transient error of an emulator under load (CI runs every package at
// once) is retried as in production instead of failing the pass. Memory
// roots stay bare: they have no transient errors and one shared handle.
func openStack(t *testing.T, r objstoretest.Root) objstore.Store {
	if r.Backend == objstoretest.Memory.Name {
		return r.Open(t)
	}
	s, err := stack.Open(context.Background(), r.URI, r.Options, stack.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err, "open %s", r.URI)
	return s
}

func (f *fixture) store(i int) objstore.Store { return f.stores[f.uris[i]] }

// at moves every store's clock to at after the fixture's start (never
// back).
func (f *fixture) at(at time.Duration) {
	for _, s := range f.clocks {
		s.Advance(at - s.Offset())
	}
}

// table writes a Lance-layout table; dropped > 0 writes a marker dated that
// long ago with ttl.
func (f *fixture) table(root int, name string, files int, droppedAgo, ttl time.Duration) {
	s := f.store(root)
	ctx := context.Background()
	lancetest.Small(files).Put(f.t, s, lifecycle.TableDir(name))
	if droppedAgo > 0 {
		// Objects are written now; a marker written after them with an old
		// deleted_at would trip the identity fence, so advance the clock
		// instead: the marker is dated now and the pass runs later.
		_, err := s.Put(ctx, name+".deleted", lifecycle.EncodeMarker(f.now, ttl))
		require.NoError(f.t, err)
	}
}

func (f *fixture) worker(cfg config.Config, at time.Duration) *Worker {
	f.at(at)
	var rs []roots.Root
	for _, u := range f.uris {
		rs = append(rs, roots.Root{URI: u})
	}
	return &Worker{
		Config:   cfg,
		Open:     func(_ context.Context, r roots.Root) (objstore.Store, error) { return f.stores[r.URI], nil },
		Roots:    func(context.Context) ([]roots.Root, error) { return rs, nil },
		Observer: f.rec,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:      func() time.Time { return f.now.Add(at) },
		Owner:    "test/1",
	}
}

func (f *fixture) keys(root int, prefix string) []string {
	var out []string
	require.NoError(f.t, f.store(root).Walk(context.Background(), prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}

// recorder is an Observer that keeps every decision.
type recorder struct {
	mu        sync.Mutex
	decisions []Decision
	planned   []PlanSummary
	finished  int
}

func (r *recorder) PassStarted(*Report) {}
func (r *recorder) RootPlanned(_ *Report, rr *RootReport, _ lifecycle.Plan, _ time.Time) {
	r.mu.Lock()
	r.planned = append(r.planned, rr.Plan)
	r.mu.Unlock()
}
func (r *recorder) Decision(_ *Report, d Decision) {
	r.mu.Lock()
	r.decisions = append(r.decisions, d)
	r.mu.Unlock()
}
func (r *recorder) RootFinished(*Report, *RootReport) {}
func (r *recorder) PassFinished(*Report)              { r.mu.Lock(); r.finished++; r.mu.Unlock() }

// byTable maps "table" to "action/reason" for root i's decisions.
func byTable(rep *Report, root int) map[string]string {
	out := map[string]string{}
	for d := range rep.Roots[root].All() {
		out[d.Table] = string(d.Action) + "/" + string(d.Reason)
	}
	return out
}

func baseConfig() config.Config {
	c := config.Default()
	c.Safety.BlastRadiusMaxPercent = 0
	return c
}

func TestPassPurgesDueAndReportsTheRest(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 2)
		f.table(0, "old", 3, 1, 7*day)
		f.table(0, "fresh", 1, 1, 30*day)
		f.table(0, "live", 1, 0, 0)
		f.table(1, "a.b", 2, 1, 7*day)
		_, err := f.store(1).Put(context.Background(), "bad.deleted", []byte("nope"))
		require.NoError(t, err)
		f.table(1, "bad", 1, 0, 0)

		rep, err := f.worker(baseConfig(), 7*day+12*time.Hour).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Len(t, rep.Roots, 2)
		require.Equal(t, map[string]string{"old": "purged/due", "fresh": "skipped/not_due"}, byTable(rep, 0))
		require.Equal(t, map[string]string{"a.b": "purged/due", "bad": "failed/invalid_marker"}, byTable(rep, 1))
		tot := rep.Totals()
		require.Equal(t, 2, tot.Purged)
		require.Equal(t, int64(5+4), tot.Objects)
		require.Equal(t, outcome.ResultPartial, rep.Result(), "an invalid marker makes the pass partial")
		require.Empty(t, f.keys(0, "old."))
		require.NotEmpty(t, f.keys(0, "fresh.lance/"))
		require.NotEmpty(t, f.keys(0, "live.lance/"))
		require.NotEmpty(t, f.keys(1, "bad.lance/"))
		require.Len(t, f.rec.decisions, 4)
		require.Equal(t, 1, f.rec.finished)
		require.Equal(t, PlanSummary{Tables: 3, Live: 1, SoftDeleted: 2, Due: 1, OldestDue: f.rec.planned[0].OldestDue}, f.rec.planned[0])
	}, objstoretest.Shared()...)
}

// A marker reaper cannot read fails its table (reason io, kept), not the
// root: the other due tables of the root are still purged.
func TestUnreadableMarkerFailsOnlyItsTable(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 2, 1, 7*day)
	f.table(0, "denied", 2, 1, 7*day)
	f.stores[f.uris[0]] = &objstoretest.FailKeys{Store: f.store(0), Fail: map[string]error{
		"denied.deleted": errors.New("api error AccessDenied: Access Denied"),
	}}

	rep, err := f.worker(baseConfig(), 8*day).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.NoError(t, rep.Roots[0].Err)
	require.Equal(t, map[string]string{"old": "purged/due", "denied": "failed/io"}, byTable(rep, 0))
	require.Equal(t, outcome.ResultPartial, rep.Result())
	require.Empty(t, f.keys(0, "old."))
	require.Len(t, f.keys(0, "denied."), 1+4, "marker and data kept")
	require.Equal(t, 1, f.rec.planned[0].InvalidMarker, "counted where an operator looks")
}

func TestMinTTLFloor(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "quick", 1, 1, 10*time.Minute)
	cfg := baseConfig()
	rep, err := f.worker(cfg, time.Hour).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "skipped/short_ttl", byTable(rep, 0)["quick"])
	require.Contains(t, rep.Roots[0].Decisions[0].Detail, "safety.allow_short_ttl")
	require.NotEmpty(t, f.keys(0, "quick.lance/"))

	cfg.Safety.AllowShortTTL = true
	rep, err = f.worker(cfg, time.Hour).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "purged/due", byTable(rep, 0)["quick"])
}

func TestBlastRadiusRefusesRoot(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	for i := range 12 {
		ago := time.Duration(0)
		if i < 8 {
			ago = 1
		}
		f.table(0, fmt.Sprintf("t%02d", i), 0, ago, 7*day)
	}
	for _, tc := range []struct {
		name string
		set  func(*config.Safety)
	}{
		{"percent", func(s *config.Safety) { s.BlastRadiusMaxPercent = 50; s.BlastRadiusMinTables = 10 }},
		{"count", func(s *config.Safety) { s.BlastRadiusMaxTables = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.set(&cfg.Safety)
			rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, outcome.ReasonBlastRadius, rep.Roots[0].Refused)
			require.Equal(t, 8, rep.Totals().Refused)
			require.Len(t, f.keys(0, ""), 12*2+8, "nothing deleted")
		})
	}
	t.Run("small roots are not refused by the percentage", func(t *testing.T) {
		cfg := baseConfig()
		cfg.Safety.BlastRadiusMaxPercent, cfg.Safety.BlastRadiusMinTables = 50, 20
		cfg.DryRun = true
		rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Empty(t, rep.Roots[0].Refused)
	})
	t.Run("confirmed", func(t *testing.T) {
		cfg := baseConfig()
		cfg.Safety.BlastRadiusMaxTables, cfg.Safety.ConfirmBlastRadius = 3, true
		rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, 8, rep.Totals().Purged)
	})
}

func TestPauseAndDryRunDeleteNothing(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 1, 1, 7*day)
	before := f.keys(0, "")
	cases := []struct {
		name   string
		setup  func(*config.Config)
		action string
	}{
		{"pause object", func(*config.Config) {
			_, err := f.store(0).Put(context.Background(), PauseKey, nil)
			require.NoError(t, err)
		}, "skipped/paused"},
		{"paused config", func(c *config.Config) { c.Paused = true }, "skipped/paused"},
		{"dry run", func(c *config.Config) { c.DryRun = true }, "dry_run/due"},
		{"retention disabled", func(c *config.Config) { f := false; c.Safety.RetentionEnabled = &f }, "dry_run/due"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			tc.setup(&cfg)
			rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, tc.action, byTable(rep, 0)["old"])
			require.NoError(t, f.store(0).Delete(context.Background(), PauseKey))
			require.Equal(t, before, f.keys(0, ""))
		})
	}
}

func TestLimitsCarryOverToTheNextPass(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	for i := range 4 {
		f.table(0, fmt.Sprintf("t%d", i), 1, 1, 7*day)
	}
	f.table(0, "huge", 1500, 1, 7*day)
	cfg := baseConfig()
	cfg.Limits.MaxTablesPerPass = 3
	cfg.Limits.MaxObjectsPerTable = 500
	cfg.Limits.TableConcurrency = 2
	w := f.worker(cfg, 8*day)
	purged := map[string]bool{}
	for pass := 0; pass < 6 && len(purged) < 5; pass++ {
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		n := 0
		for table, ar := range byTable(rep, 0) {
			switch {
			case ar == "purged/due":
				purged[table] = true
				n++
			case ar == "skipped/partial":
				n++
			default:
				require.Equal(t, "skipped/limit", ar, table)
			}
		}
		require.LessOrEqual(t, n, 3, "max_tables_per_pass")
	}
	require.Len(t, purged, 5, "every table purged within a few passes")
	require.Empty(t, f.keys(0, ""))
}

func TestDrainingStartsNoNewTable(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	for i := range 5 {
		f.table(0, fmt.Sprintf("t%d", i), 1, 1, 7*day)
	}
	cfg := baseConfig()
	cfg.Limits.TableConcurrency = 1
	var mu sync.Mutex
	started := 0
	w := f.worker(cfg, 8*day)
	w.Observer = Observers{f.rec, decisionHook(func(Decision) { mu.Lock(); started++; mu.Unlock() })}
	rep, err := w.Pass(context.Background(), func() bool { mu.Lock(); defer mu.Unlock(); return started >= 2 })
	require.NoError(t, err)
	tot := rep.Totals()
	require.Equal(t, 2, tot.Purged)
	require.Equal(t, 3, tot.Skipped)
	for d := range rep.Roots[0].All() {
		if d.Action == outcome.Skipped {
			require.Equal(t, outcome.ReasonShutdown, d.Reason)
		}
	}
	rep, err = f.worker(cfg, 8*day).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Totals().Purged, "the next pass finishes the job")
}

// A purge cancelled in the middle (shutdown past its grace) keeps its marker
// and the next pass finishes it.
func TestCancelMidPurgeLeavesAResumableState(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "big", 1500, 1, 7*day)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := f.stores[f.uris[0]]
	f.stores[f.uris[0]] = &cancelAfterBatch{Store: inner, cancel: cancel}
	cfg := baseConfig()
	cfg.Limits.DeleteConcurrency = 1
	rep, err := f.worker(cfg, 8*day).Pass(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "skipped/shutdown", byTable(rep, 0)["big"])
	require.True(t, rep.Interrupted)
	require.Equal(t, outcome.ResultInterrupted, rep.Result())
	_, err = inner.Head(context.Background(), "big.deleted")
	require.NoError(t, err, "marker kept")
	_, err = inner.Head(context.Background(), lifecycle.LockKey("big"))
	require.ErrorIs(t, err, objstore.ErrNotFound, "lease released")

	f.stores[f.uris[0]] = inner
	rep, err = f.worker(cfg, 8*day).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "purged/due", byTable(rep, 0)["big"])
	require.Empty(t, f.keys(0, ""))
}

type cancelAfterBatch struct {
	objstore.Store
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelAfterBatch) DeleteBatch(ctx context.Context, keys []string) error {
	err := c.Store.DeleteBatch(ctx, keys)
	if !strings.Contains(keys[0], "_versions/") {
		c.once.Do(c.cancel)
	}
	return err
}

type decisionHook func(Decision)

func (decisionHook) PassStarted(*Report)                                         {}
func (decisionHook) RootPlanned(*Report, *RootReport, lifecycle.Plan, time.Time) {}
func (h decisionHook) Decision(_ *Report, d Decision)                            { h(d) }
func (decisionHook) RootFinished(*Report, *RootReport)                           {}
func (decisionHook) PassFinished(*Report)                                        {}

// A pass traces itself: one span per pass, per root and per table purge,
// nested, with the attributes an operator searches by.
func TestPassSpans(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 1, 1, 7*day)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	w := f.worker(baseConfig(), 8*day)
	w.Tracer = tp.Tracer("test")
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	require.Contains(t, spans, "reaper.pass")
	require.Contains(t, spans, "reaper.root")
	require.Contains(t, spans, "reaper.purge_table")
	require.Equal(t, spans["reaper.pass"].SpanContext().SpanID(), spans["reaper.root"].Parent().SpanID())
	require.Equal(t, spans["reaper.root"].SpanContext().SpanID(), spans["reaper.purge_table"].Parent().SpanID())
	attrs := map[string]string{}
	for _, a := range spans["reaper.purge_table"].Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	require.Equal(t, "old", attrs["reaper.table"])
	require.Equal(t, "3", attrs["reaper.objects"])
	for _, a := range spans["reaper.pass"].Attributes() {
		if a.Key == "reaper.pass_id" {
			require.Equal(t, rep.PassID, a.Value.AsString())
		}
	}
}

// Every span of a pass is in the pass's trace (before, each lease release
// was a one-span trace of its own), a failed table's span has status ERROR
// (before: UNSET with an exception event, which Jaeger and Tempo show as
// fine), and the pass and root spans carry their result.
func TestPassSpansTellTheOutcome(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 1, 1, 7*day)
	f.table(0, "other", 1, 1, 7*day)
	_, err := f.store(0).Put(context.Background(), "bad.deleted", []byte("nope"))
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	w := f.worker(baseConfig(), 8*day)
	w.Tracer = tp.Tracer("test")
	open := w.Open
	w.Open = func(ctx context.Context, r roots.Root) (objstore.Store, error) {
		s, err := open(ctx, r)
		return metrics.WrapStoreTracing(s, tp), err
	}
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, outcome.ResultPartial, rep.Result())

	var pass sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "reaper.pass" {
			pass = s
		}
	}
	require.NotNil(t, pass)
	releases := 0
	for _, s := range rec.Ended() {
		require.Equal(t, pass.SpanContext().TraceID(), s.SpanContext().TraceID(), "span %s is outside the pass's trace", s.Name())
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		switch s.Name() {
		case "reaper.pass":
			require.Equal(t, "partial", attrs["reaper.result"])
			require.Equal(t, codes.Error, s.Status().Code)
		case "reaper.root":
			require.Equal(t, "partial", attrs["reaper.result"])
			require.Equal(t, codes.Error, s.Status().Code)
		case "reaper.purge_table":
			require.Equal(t, "purged", attrs["reaper.action"], attrs["reaper.table"])
			require.Equal(t, codes.Unset, s.Status().Code)
		}
		if strings.Contains(s.Name(), "delete_if_match") {
			releases++
		}
	}
	require.Positive(t, releases, "lease releases are traced")
}

// A failed table's span has status ERROR, not UNSET with an exception.
func TestFailedTableSpanIsAnError(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("test").Start(context.Background(), "reaper.purge_table")
	endTableSpan(span, Decision{Action: outcome.Failed, Reason: outcome.ReasonIO, Detail: "boom", Err: errors.New("boom")})
	span.End()
	s := rec.Ended()[0]
	require.Equal(t, codes.Error, s.Status().Code)
	require.Equal(t, "io: boom", s.Status().Description)
}

// Every decision is logged: one "table decision" line per table, at info
// (error when failed, debug when not due), with its table, action and
// reason. Before, not-due, held, paused, refused and invalid-marker
// decisions produced no line at any level, and the pass line's skip count
// disagreed with the report's.
func TestEveryDecisionIsLogged(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	f.table(0, "old", 1, 1, 7*day)
	f.table(0, "fresh", 1, 1, 30*day)
	_, err := f.store(0).Put(context.Background(), "bad.deleted", []byte("nope"))
	require.NoError(t, err)
	var buf strings.Builder
	w := f.worker(baseConfig(), 8*day)
	w.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)

	type line struct {
		Level, Msg, Table, Action, Reason, Error string
		Skipped                                  *int
	}
	levels := map[string]string{}
	var finished line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var x line
		require.NoError(t, json.Unmarshal([]byte(l), &x), l)
		require.NotContains(t, l, `"err":`, "one key for errors: error")
		switch x.Msg {
		case "table decision":
			levels[x.Table] = x.Level + " " + x.Action + "/" + x.Reason
		case "pass finished":
			finished = x
		}
	}
	require.Equal(t, map[string]string{
		"old": "INFO purged/due", "fresh": "DEBUG skipped/not_due", "bad": "ERROR failed/invalid_marker",
	}, levels)
	require.NotNil(t, finished.Skipped)
	require.Equal(t, rep.Totals().Skipped, *finished.Skipped)
}
