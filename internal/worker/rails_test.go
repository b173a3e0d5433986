package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// The rails run in this order; a change of order changes which reason a
// table gets and must be deliberate.
func TestRailOrder(t *testing.T) {
	var root, start []outcome.Reason
	for _, r := range rootRails {
		root = append(root, r.reason)
	}
	for _, r := range startRails {
		start = append(start, r.reason)
	}
	require.Equal(t, []outcome.Reason{outcome.ReasonShortTTL, outcome.ReasonPaused, outcome.ReasonBlastRadius}, root)
	require.Equal(t, []outcome.Reason{outcome.ReasonShutdown, outcome.ReasonDeadline, outcome.ReasonLimit}, start)
	var walk []outcome.Reason
	for _, r := range walkRails {
		walk = append(walk, r.reason)
	}
	require.Equal(t, []outcome.Reason{outcome.ReasonTooLarge}, walk)
}

// safety.max_table_bytes skips a table whose walk finds more bytes, on a
// dry run too, with nothing deleted; 0 is no cap; a table at the cap is
// purged.
func TestTooLargeRail(t *testing.T) {
	tableBytes := func(f *fixture, name string) int64 {
		var n int64
		require.NoError(t, f.store(0).Walk(context.Background(), lifecycle.TableDir(name), func(objs []objstore.Object) error {
			for _, o := range objs {
				n += o.Size
			}
			return nil
		}))
		return n
	}
	for _, tc := range []struct {
		name  string
		limit func(small, big int64) int64
		dry   bool
		want  map[string]string
	}{
		{"no cap", func(int64, int64) int64 { return 0 }, false, map[string]string{"small": "purged/due", "big": "purged/due"}},
		{"over the cap", func(small, _ int64) int64 { return small }, false, map[string]string{"small": "purged/due", "big": "skipped/too_large"}},
		{"dry run", func(small, _ int64) int64 { return small }, true, map[string]string{"small": "dry_run/due", "big": "skipped/too_large"}},
		{"at the cap", func(_, big int64) int64 { return big }, false, map[string]string{"small": "purged/due", "big": "purged/due"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			f.table(0, "small", 1, 1, day)
			f.table(0, "big", 6, 1, day)
			small, big := tableBytes(f, "small"), tableBytes(f, "big")
			require.Less(t, small, big)
			before := f.keys(0, "big.lance/")
			cfg := baseConfig()
			cfg.DryRun, cfg.Safety.MaxTableBytes = tc.dry, tc.limit(small, big)
			rep, err := f.worker(cfg, 4*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, byTable(rep, 0))
			if tc.want["big"] == "skipped/too_large" {
				require.Equal(t, before, f.keys(0, "big.lance/"), "nothing of the big table deleted")
				for d := range rep.Roots[0].All() {
					if d.Table == "big" {
						require.Contains(t, d.Detail, "safety.max_table_bytes")
					}
				}
			}
		})
	}
}

// Each root rail, alone and before the next: the tables it holds back, the
// reason each gets, and whether the root is refused.
func TestRootRails(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(f *fixture, c *config.Config)
		want    map[string]string
		refused outcome.Reason
	}{
		{
			name:  "short ttl below the floor is skipped, the rest purged",
			setup: func(_ *fixture, c *config.Config) { c.Safety.MinTTL = config.Duration(2 * day) },
			want:  map[string]string{"a": "skipped/short_ttl", "b": "purged/due", "c": "skipped/short_ttl"},
		},
		{
			name: "allow_short_ttl lets them through",
			setup: func(_ *fixture, c *config.Config) {
				c.Safety.MinTTL, c.Safety.AllowShortTTL = config.Duration(2*day), true
			},
			want: map[string]string{"a": "purged/due", "b": "purged/due", "c": "purged/due"},
		},
		{
			name:    "pause refuses the root after the short-ttl rail",
			setup:   func(_ *fixture, c *config.Config) { c.Paused = true; c.Safety.MinTTL = config.Duration(2 * day) },
			want:    map[string]string{"a": "skipped/short_ttl", "b": "skipped/paused", "c": "skipped/short_ttl"},
			refused: outcome.ReasonPaused,
		},
		{
			name: "pause object",
			setup: func(f *fixture, _ *config.Config) {
				_, err := f.store(0).Put(context.Background(), PauseKey, []byte("maintenance"))
				require.NoError(t, err)
			},
			want:    map[string]string{"a": "skipped/paused", "b": "skipped/paused", "c": "skipped/paused"},
			refused: outcome.ReasonPaused,
		},
		{
			name:    "pause wins over the blast radius",
			setup:   func(_ *fixture, c *config.Config) { c.Paused = true; c.Safety.BlastRadiusMaxTables = 1 },
			want:    map[string]string{"a": "skipped/paused", "b": "skipped/paused", "c": "skipped/paused"},
			refused: outcome.ReasonPaused,
		},
		{
			name:    "blast radius refuses the root",
			setup:   func(_ *fixture, c *config.Config) { c.Safety.BlastRadiusMaxTables = 2 },
			want:    map[string]string{"a": "refused/blast_radius", "b": "refused/blast_radius", "c": "refused/blast_radius"},
			refused: outcome.ReasonBlastRadius,
		},
		{
			name: "tables the short-ttl rail kept do not count in the blast radius",
			setup: func(_ *fixture, c *config.Config) {
				c.Safety.BlastRadiusMaxTables, c.Safety.MinTTL = 1, config.Duration(2*day)
			},
			want: map[string]string{"a": "skipped/short_ttl", "b": "purged/due", "c": "skipped/short_ttl"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			f.table(0, "a", 1, 1, day)
			f.table(0, "b", 1, 1, 3*day)
			f.table(0, "c", 1, 1, day)
			cfg := baseConfig()
			tc.setup(f, &cfg)
			rep, err := f.worker(cfg, 4*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, byTable(rep, 0))
			require.Equal(t, tc.refused, rep.Roots[0].Refused)
		})
	}
}

func TestBlastRadius(t *testing.T) {
	cases := []struct {
		name       string
		safety     config.Safety
		due, total int
		refused    bool
	}{
		{"nothing due", config.Safety{BlastRadiusMaxTables: 1}, 0, 10, false},
		{"within the count", config.Safety{BlastRadiusMaxTables: 3}, 3, 10, false},
		{"over the count", config.Safety{BlastRadiusMaxTables: 3}, 4, 10, true},
		{"over the percentage", config.Safety{BlastRadiusMaxPercent: 50, BlastRadiusMinTables: 10}, 6, 10, true},
		{"small root spared the percentage", config.Safety{BlastRadiusMaxPercent: 50, BlastRadiusMinTables: 20}, 6, 10, false},
		{"confirmed", config.Safety{BlastRadiusMaxTables: 1, ConfirmBlastRadius: true}, 6, 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why := blastRadius(tc.safety, tc.due, tc.total)
			require.Equal(t, tc.refused, why != "", why)
		})
	}
}

// Each start rail: a table it holds back gets its reason. Before the
// shutdown and deadline reasons, both were "limit" (not started) and
// "interrupted" (in flight).
func TestStartRails(t *testing.T) {
	cases := []struct {
		name string
		run  func(f *fixture) *Report
		want map[string]string
		// interrupted is Report.Interrupted; deadline is Report.DeadlineHit.
		interrupted, deadline bool
	}{
		{
			name: "draining starts no new table",
			run: func(f *fixture) *Report {
				cfg := baseConfig()
				cfg.Limits.TableConcurrency = 1
				w := f.worker(cfg, 8*day)
				var mu sync.Mutex
				decided := 0
				w.Observer = decisionHook(func(Decision) { mu.Lock(); decided++; mu.Unlock() })
				rep, err := w.Pass(context.Background(), func() bool { mu.Lock(); defer mu.Unlock(); return decided > 0 })
				require.NoError(f.t, err)
				return rep
			},
			want:        map[string]string{"a": "purged/due", "b": "skipped/shutdown"},
			interrupted: true,
		},
		{
			name: "cancelled mid-purge: the table in flight and the rest are shutdown",
			run: func(f *fixture) *Report {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				f.stores[f.uris[0]] = &blockDeletes{Store: f.store(0), started: cancel}
				cfg := baseConfig()
				cfg.Limits.TableConcurrency = 1
				rep, err := f.worker(cfg, 8*day).Pass(ctx, nil)
				require.NoError(f.t, err)
				return rep
			},
			want:        map[string]string{"a": "skipped/shutdown", "b": "skipped/shutdown"},
			interrupted: true,
		},
		{
			name: "max_pass_duration: the table in flight and the rest are deadline",
			run: func(f *fixture) *Report {
				// The first delete waits for the pass's deadline.
				f.stores[f.uris[0]] = &blockDeletes{Store: f.store(0)}
				cfg := baseConfig()
				cfg.Limits.TableConcurrency = 1
				cfg.Limits.MaxPassDuration = config.Duration(time.Second)
				rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
				require.NoError(f.t, err)
				return rep
			},
			want:     map[string]string{"a": "skipped/deadline", "b": "skipped/deadline"},
			deadline: true,
		},
		{
			name: "max_tables_per_pass",
			run: func(f *fixture) *Report {
				cfg := baseConfig()
				cfg.Limits.MaxTablesPerPass, cfg.Limits.TableConcurrency = 1, 1
				rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
				require.NoError(f.t, err)
				return rep
			},
			want: map[string]string{"a": "purged/due", "b": "skipped/limit"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			f.table(0, "a", 1, 1, 6*day) // due first
			f.table(0, "b", 1, 1, 7*day)
			rep := tc.run(f)
			require.Equal(t, tc.want, byTable(rep, 0))
			require.Equal(t, tc.interrupted, rep.Interrupted)
			require.Equal(t, tc.deadline, rep.DeadlineHit)
			for d := range rep.Roots[0].All() {
				if d.Action == outcome.Skipped {
					require.True(t, strings.Contains(d.Detail, "next pass"), "%s: %q says the next pass finishes it", d.Table, d.Detail)
				}
			}
		})
	}
}

// blockDeletes holds the first delete batch until its context ends, after
// calling started (if set): a purge caught in flight.
type blockDeletes struct {
	objstore.Store
	started func()
	once    sync.Once
}

func (b *blockDeletes) DeleteBatch(ctx context.Context, keys []string) error {
	blocked := false
	b.once.Do(func() { blocked = true })
	if !blocked {
		return b.Store.DeleteBatch(ctx, keys)
	}
	if b.started != nil {
		b.started()
	}
	<-ctx.Done()
	return fmt.Errorf("delete %s: %w", keys[0], ctx.Err())
}

// A walk rail judges a table by what its purge's walk found, before
// anything is committed or deleted: one entry in walkRails holds back the
// tables it names, on a dry run too, and the others are purged.
func TestWalkRails(t *testing.T) {
	saved := walkRails
	t.Cleanup(func() { walkRails = saved })
	walkRails = []walkRail{{outcome.ReasonLimit, func(_ *pass, _ lifecycle.TableStatus, objects, bytes int64) string {
		if objects > 3 {
			return fmt.Sprintf("%d objects, %d bytes: too many for this test", objects, bytes)
		}
		return ""
	}}}
	for _, dry := range []bool{true, false} {
		t.Run(fmt.Sprintf("dry run %v", dry), func(t *testing.T) {
			f := newFixture(t, objstoretest.Local, 1)
			f.table(0, "small", 1, 1, day)
			f.table(0, "big", 6, 1, day)
			before := f.keys(0, "big.lance/")
			cfg := baseConfig()
			cfg.DryRun = dry
			rep, err := f.worker(cfg, 4*day).Pass(context.Background(), nil)
			require.NoError(t, err)
			want := map[string]string{"small": "purged/due", "big": "skipped/limit"}
			if dry {
				want["small"] = "dry_run/due"
			}
			require.Equal(t, want, byTable(rep, 0))
			require.Equal(t, before, f.keys(0, "big.lance/"), "the held table is untouched")
			for d := range rep.Roots[0].All() {
				if d.Table == "big" {
					require.Contains(t, d.Detail, "too many for this test")
					require.Zero(t, d.Objects)
					require.NoError(t, d.Err)
				}
			}
			_, err = f.store(0).Head(context.Background(), lifecycle.CommitKey("big"))
			require.ErrorIs(t, err, objstore.ErrNotFound, "no purge commit")
		})
	}
}
