//go:build !fuzzonly

package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// The names of the namespaced root the tests build (nsRoot).
const (
	nsInner = "76cba2fc_tenant_a$inner/"
	nsDeep  = "f9500c33_tenant_a$sub$deep/"
	nsBare  = "0123abcd_tenant_a$new/"    // .lance-reserved alone
	nsDereg = "0a0b0c0d_staging$old/"     // deregistered
	nsClash = "aaaaaaaa_twin/"            // beside a root table aaaaaaaa_twin
	nsLeft  = "bbbbbbbb_staging$leftover" // a file, not a directory
)

// nsRoot writes a root as LanceDB 0.39 leaves it with namespaces: a root
// table, two tables in namespaces (one nested), the catalog (a Lance table
// itself), a name LanceDB reserved and never wrote, a deregistered table,
// a clash of a root table and a manifest directory of the same stem, and
// what is not a table (a file named like a manifest directory, a folder of
// someone else's).
func nsRoot(t *testing.T, s objstore.Store) {
	t.Helper()
	ctx := context.Background()
	put := func(k, v string) {
		_, err := s.Put(ctx, k, []byte(v))
		require.NoError(t, err)
	}
	putLanceFixture(t, s, "top")
	putLanceFixture(t, s, nsInner)
	put(nsInner+ReservedFile, "")
	putLanceFixture(t, s, nsDeep)
	lancetest.LanceDB(t, s, CatalogDir+"/")
	put(nsBare+ReservedFile, "")
	putLanceFixture(t, s, nsDereg)
	put(nsDereg+DeregisteredFile, "")
	putLanceFixture(t, s, "aaaaaaaa_twin")
	putLanceFixture(t, s, nsClash)
	put(nsLeft, "a file")
	put("backups/2024.tar", "not a table")
}

func statesOf(sts []TableStatus) map[string]State {
	out := map[string]State{}
	for _, s := range sts {
		out[s.Name] = s.State
	}
	return out
}

// Status lists every table of the root, in both layouts, each namespaced
// one by its directory with its object id; what is not a table says why;
// the catalog is not a table.
func TestNamespacedTablesAreListed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		ns := newNS(t, s, &clock{})
		nsRoot(t, s)
		// A record beside a namespaced table is its own; beside a clash,
		// the root table's.
		for _, k := range []string{RetainKey(nsInner), RetainKey(nsClash)} {
			_, err := s.Put(ctx, k, []byte("{}"))
			require.NoError(t, err)
		}
		all, err := ns.List(ctx)
		require.NoError(t, err)
		for _, st := range all {
			require.Equal(t, st.Name == nsInner || st.Name == "aaaaaaaa_twin", st.RetainRecord, st.Name)
		}
		require.Equal(t, map[string]State{
			"top": StateExists, nsInner: StateExists, nsDeep: StateExists,
			nsBare: StateNotATable, nsDereg: StateDeregistered,
			"aaaaaaaa_twin": StateExists, nsClash: StateNotATable,
		}, statesOf(all))
		for _, st := range all {
			switch st.Name {
			case nsBare:
				require.Contains(t, st.Problem, ReservedFile)
			case nsDereg:
				require.Contains(t, st.Problem, DeregisteredFile)
			case nsClash:
				require.Contains(t, st.Problem, "aaaaaaaa_twin.lance")
			}
		}

		// A plan reads no directory: every candidate is live until the
		// retention read says otherwise; the clash is left alone.
		p, err := ns.PlanPurge(ctx, time.Time{})
		require.NoError(t, err)
		var live []string
		for _, st := range p.Live {
			live = append(live, st.Name)
		}
		require.ElementsMatch(t, []string{"top", nsInner, nsDeep, nsBare, nsDereg, "aaaaaaaa_twin"}, live)

		// Named by directory or by object id.
		st, err := ns.Status(ctx, "tenant_a$inner", nsDeep, "tenant_a$nope", "top")
		require.NoError(t, err)
		require.Equal(t, map[string]State{nsInner: StateExists, nsDeep: StateExists, "tenant_a$nope": StateNotFound, "top": StateExists}, statesOf(st))
	})
}

// Retention plans and cleans a namespaced table as a root table, its
// lease and record beside its directory; it refuses what is not a table
// and never reads the catalog.
func TestNamespacedRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		ns := newNSBatch(t, s, &clock{}, 2)
		nsRoot(t, s)
		p := fixturePolicy(t, s, nsInner)
		plans, err := ns.PlanRetention(ctx, p)
		require.NoError(t, err)
		got := map[string]RetentionResult{}
		for _, pl := range plans {
			got[pl.Name] = pl.Result
		}
		require.Equal(t, map[string]RetentionResult{
			"top": RetentionPlanned, nsInner: RetentionPlanned, nsDeep: RetentionPlanned, "aaaaaaaa_twin": RetentionPlanned,
			nsBare: RetentionUnsupported, nsDereg: RetentionUnsupported,
		}, got)
		for _, pl := range plans {
			if pl.Name == nsDereg {
				require.Contains(t, pl.Reason, "deregistered")
			}
			for _, f := range pl.Plan.Files {
				require.Truef(t, len(f.Key) > len(TableDir(pl.Name)) && f.Key[:len(TableDir(pl.Name))] == TableDir(pl.Name), "%s plans %s", pl.Name, f.Key)
			}
		}
		before := snapshot(t, s)

		sawRecord := false
		res, err := ns.Retain(ctx, "76cba2fc_tenant_a$inner/", RetainOptions{Policy: p, BeforeDelete: func(ctx context.Context, _ int, _, _ int64) error {
			snap := snapshot(t, s)
			_, lease := snap["76cba2fc_tenant_a$inner.reaper-lock"]
			_, rec := snap["76cba2fc_tenant_a$inner.reaper-retain"]
			sawRecord = lease && rec
			return nil
		}})
		require.NoError(t, err)
		require.Equal(t, RetainCleaned, res.Outcome)
		require.True(t, sawRecord, "the lease and the record sit beside the directory, at the root")
		after := snapshot(t, s)
		for k := range before {
			if _, ok := after[k]; !ok {
				require.Truef(t, len(k) > len(nsInner) && k[:len(nsInner)] == nsInner, "deleted %s, outside the table", k)
			}
		}
		for k := range after {
			_, was := before[k]
			require.Truef(t, was, "left %s behind", k)
		}
		requireReadable(t, s, nsInner)
		require.Equal(t, keysUnder(before, CatalogDir+"/"), keysUnder(after, CatalogDir+"/"))

		// Refused: what is not a table, and a clash.
		_, err = ns.Retain(ctx, nsBare, RetainOptions{Policy: p})
		require.Error(t, err)
		_, err = ns.Retain(ctx, nsDereg, RetainOptions{Policy: p})
		require.Error(t, err)
		_, err = ns.Retain(ctx, nsClash, RetainOptions{Policy: p})
		require.ErrorIs(t, err, ErrNotATable)
		require.Equal(t, keysUnder(before, nsDereg), keysUnder(snapshot(t, s), nsDereg))
	})
}

// Drop, revive and purge are root-table operations: a namespaced name is
// refused in one line that says why. A hold is not: it keeps retention
// off the table.
func TestNamespacedLifecycleRefusals(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	nsRoot(t, s)
	_, err := ns.Drop(ctx, nsInner, 0)
	require.ErrorIs(t, err, ErrNamespaced)
	_, err = ns.Drop(ctx, "tenant_a$inner", 0)
	require.ErrorIs(t, err, ErrNamespaced)
	require.Contains(t, err.Error(), "V1-only")
	require.ErrorIs(t, ns.Revive(ctx, nsInner), ErrNamespaced)
	_, err = ns.Purge(ctx, nsInner, PurgeOptions{})
	require.ErrorIs(t, err, ErrNamespaced)
	require.NotContains(t, snapshot(t, s), MarkerKey(nsInner))

	_, err = ns.PlaceHold(ctx, nsInner, "case 7")
	require.NoError(t, err)
	require.Contains(t, snapshot(t, s), "76cba2fc_tenant_a$inner.reaper-hold")
	st := statusOf(t, ns, nsInner)
	require.Equal(t, StateExists, st.State)
	require.NotNil(t, st.Hold)
	_, err = ns.Retain(ctx, nsInner, RetainOptions{Policy: fixturePolicy(t, s, nsInner)})
	require.ErrorIs(t, err, ErrHeld)
}

// A status with versions shows the catalog's versions: it grows with
// every namespace operation and nothing removes any.
func TestNamespacedCatalogVersions(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	nsRoot(t, s)
	sums := map[string]*RetentionSummary{}
	states := map[string]State{}
	err := ns.EachStatusRetention(ctx, nil, fixturePolicy(t, s, "top"), func(st TableStatus, sum *RetentionSummary, _ time.Time) error {
		sums[st.Name], states[st.Name] = sum, st.State
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, StateCatalog, states[CatalogDir+"/"])
	require.Equal(t, 6, sums[CatalogDir+"/"].Versions)
	require.Equal(t, RetentionUnsupported, sums[CatalogDir+"/"].Result)
	require.Equal(t, 6, sums[nsDeep].Versions)
	require.Nil(t, sums[nsBare])
}

// What reading directories instead of the catalog can get wrong, and why it
// is harmless. A table LanceDB is dropping (dropTable removes the catalog's
// row, then the directory, file by file) may have lost its manifests
// first: the retention read refuses it, nothing is deleted. A table
// renamed in place keeps its directory, so two directories can carry one
// object id (the renamed table, and a new one created under the old name):
// both are listed and cleaned as the tables they are, and a caller naming
// the object id is told to name the directory.
func TestNamespacedStructuralCases(t *testing.T) {
	ctx := context.Background()
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	dropping := "22222222_tenant_a$dropping/"
	keys := putLanceFixture(t, s, dropping)
	for _, k := range keys {
		if strings.Contains(k, "/_versions/") {
			require.NoError(t, s.Delete(ctx, k))
		}
	}
	renamed, created := "33333333_tenant_a$old/", "44444444_tenant_a$old/"
	putLanceFixture(t, s, renamed)
	putLanceFixture(t, s, created)
	before := snapshot(t, s)

	plans, err := ns.PlanRetention(ctx, fixturePolicy(t, s, renamed))
	require.NoError(t, err)
	got := map[string]RetentionResult{}
	for _, pl := range plans {
		got[pl.Name] = pl.Result
	}
	require.Equal(t, map[string]RetentionResult{dropping: RetentionUnsupported, renamed: RetentionPlanned, created: RetentionPlanned}, got)
	_, err = ns.Retain(ctx, dropping, RetainOptions{Policy: fixturePolicy(t, s, renamed)})
	require.Error(t, err)
	require.Equal(t, keysUnder(before, dropping), keysUnder(snapshot(t, s), dropping), "nothing of a table being dropped is deleted")

	_, err = ns.ResolveObjectID(ctx, "tenant_a$old")
	require.ErrorIs(t, err, ErrInvalidName)
	require.ErrorContains(t, err, renamed)
	require.ErrorContains(t, err, created)
	st, err := ns.Status(ctx, "tenant_a$old")
	require.NoError(t, err)
	require.Len(t, st, 2, "both directories answer the object id")
	res, err := ns.Retain(ctx, renamed, RetainOptions{Policy: fixturePolicy(t, s, renamed)})
	require.NoError(t, err)
	require.Equal(t, RetainCleaned, res.Outcome)
	require.Equal(t, keysUnder(before, created), keysUnder(snapshot(t, s), created), "the other directory is its own table")
}
