//go:build !fuzzonly

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// A status with retention hands every name over in the scan's order,
// each live table with the counts of the plan PlanRetention makes for it,
// any other name with none; on every backend.
func TestEachStatusRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		ns := newNS(t, s, &clock{})
		for _, n := range []string{"a", "c", "d"} {
			putLanceFixture(t, s, n)
		}
		p := fixturePolicy(t, s, "a")
		lanceTable(t, s, "b", 2) // lancetest's layout: no manifest reaper reads
		_, err := ns.Drop(ctx, "c", time.Hour)
		require.NoError(t, err)
		plans, err := ns.PlanRetention(ctx, p)
		require.NoError(t, err)
		want := map[string]*RetentionSummary{}
		for _, pl := range plans {
			want[pl.Name] = summarize(pl)
		}
		require.Equal(t, RetentionPlanned, want["a"].Result)
		require.NotZero(t, want["a"].Bytes)

		var names []string
		got := map[string]*RetentionSummary{}
		err = ns.EachStatusRetention(ctx, nil, p, func(st TableStatus, sum *RetentionSummary, now time.Time) error {
			names = append(names, st.Name)
			got[st.Name] = sum
			require.False(t, now.IsZero())
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c", "d"}, names)
		require.Nil(t, got["c"], "soft-deleted: left to its purge")
		// Which bad manifest the reader names first varies.
		require.Equal(t, RetentionUnsupported, got["b"].Result)
		require.Equal(t, want["b"].Result, got["b"].Result)
		delete(got, "c")
		delete(got, "b")
		delete(want, "b")
		require.Equal(t, want, got)
		require.Equal(t, want["a"], got["d"], "the same table, the same plan")

		err = ns.EachStatusRetention(ctx, []string{"d"}, p, func(st TableStatus, sum *RetentionSummary, _ time.Time) error {
			require.Equal(t, "d", st.Name)
			require.Equal(t, want["d"], sum)
			return nil
		})
		require.NoError(t, err)
	})
}

// tablesRead records which tables had a manifest read.
type tablesRead struct {
	objstore.Store
	mu     sync.Mutex
	tables map[string]bool
}

func (r *tablesRead) Unwrap() objstore.Store { return r.Store }

func (r *tablesRead) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if name, _, ok := strings.Cut(key, TableSuffix+"/_versions/"); ok {
		r.mu.Lock()
		r.tables[name] = true
		r.mu.Unlock()
	}
	return r.Store.Get(ctx, key, limit)
}

// Memory stays bounded: the tables are read only a window ahead of the
// caller, so a caller that stops at the first row has had a few tables
// read, not the root's; its error is returned.
func TestEachStatusRetentionReadsAWindowAhead(t *testing.T) {
	ctx := context.Background()
	base := memstore.New()
	const tables = 120
	for i := range tables {
		putLanceFixture(t, base, fmt.Sprintf("t%03d", i))
	}
	p := fixturePolicy(t, base, "t000")
	s := &tablesRead{Store: base, tables: map[string]bool{}}
	ns := newNS(t, s, &clock{})
	stop := errors.New("enough")
	rows := 0
	err := ns.EachStatusRetention(ctx, nil, p, func(TableStatus, *RetentionSummary, time.Time) error {
		rows++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, rows)
	require.LessOrEqual(t, len(s.tables), statusPlanAhead+DefaultRetentionReads+1, "read a window ahead, not the root")
}

// PlanRetentionEach hands over each table's plan, once, as PlanRetention
// returns it: the live tables planned, unsupported ones too; a dropped
// table is not planned.
func TestPlanRetentionEach(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	for _, n := range []string{"a", "c", "d"} {
		putLanceFixture(t, s, n)
	}
	p := fixturePolicy(t, s, "a")
	lanceTable(t, s, "b", 2)
	_, err := ns.Drop(ctx, "c", time.Hour)
	require.NoError(t, err)
	got := map[string]RetentionPlan{}
	plans, err := ns.PlanRetentionEach(ctx, p, func(pl RetentionPlan) {
		_, twice := got[pl.Name]
		require.False(t, twice, "%s handed over twice", pl.Name)
		got[pl.Name] = pl
	})
	require.NoError(t, err)
	want := map[string]RetentionPlan{}
	for _, pl := range plans {
		want[pl.Name] = pl
	}
	require.Equal(t, want, got)
	require.ElementsMatch(t, []string{"a", "b", "d"}, slices.Collect(maps.Keys(got)))
}
