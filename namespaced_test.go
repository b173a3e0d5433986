package reaper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lancetest"
)

// The public API lists, names, holds and cleans tables in namespaces, by
// their directory or by the object id LanceDB knows them by, and refuses
// to drop one.
func TestNamespacedTablesThroughTheAPI(t *testing.T) {
	forEachRoot(t, func(t *testing.T, newRoot func(t *testing.T) facadeRoot) {
		ctx := context.Background()
		r := newRoot(t)
		s := r.Open(t)
		lancetest.LanceDB(t, s, "top.lance/")
		lancetest.LanceDB(t, s, "76cba2fc_tenant_a$inner/")
		lancetest.LanceDB(t, s, "f9500c33_tenant_a$sub$deep/")
		lancetest.LanceDB(t, s, "__manifest/")
		ns := openFacade(t, r)

		all, err := ns.List(ctx)
		require.NoError(t, err)
		ids := map[string][]string{}
		for _, st := range all {
			require.Equal(t, reaper.StateExists, st.State, st.Name)
			ids[st.ObjectID()] = st.Namespace()
		}
		require.Equal(t, map[string][]string{"top": nil, "tenant_a$inner": {"tenant_a"}, "tenant_a$sub$deep": {"tenant_a", "sub"}}, ids)

		st, err := ns.Status(ctx, reaper.JoinObjectID([]string{"tenant_a"}, "inner"))
		require.NoError(t, err)
		require.Len(t, st, 1)
		require.Equal(t, "76cba2fc_tenant_a$inner/", st[0].Name)

		_, err = ns.Drop(ctx, "tenant_a$inner", 0)
		require.ErrorIs(t, err, reaper.ErrNamespaced)

		_, err = ns.Hold(ctx, "tenant_a$inner", "case 9")
		require.NoError(t, err)
		policy := reaper.RetentionPolicy{Before: time.Now().Add(time.Hour), KeepVersions: 2}
		_, err = ns.Retain(ctx, "tenant_a$inner", reaper.RetainOptions{Policy: policy, AllowShortTTL: true})
		require.ErrorIs(t, err, reaper.ErrHeld)
		require.NoError(t, ns.Release(ctx, "tenant_a$inner"))

		plans, err := ns.PlanRetention(ctx, policy, "tenant_a$sub$deep")
		require.NoError(t, err)
		require.Len(t, plans, 1)
		require.Equal(t, "f9500c33_tenant_a$sub$deep/", plans[0].Name)
		require.Equal(t, reaper.RetentionPlanned, plans[0].Result)
		res, err := ns.Retain(ctx, "tenant_a$inner", reaper.RetainOptions{Policy: policy, AllowShortTTL: true})
		require.NoError(t, err)
		require.Equal(t, reaper.RetainCleaned, res.Outcome)
		require.Equal(t, "76cba2fc_tenant_a$inner/", res.Name)
		_, err = ns.Retain(ctx, "tenant_a$nope", reaper.RetainOptions{Policy: policy, AllowShortTTL: true})
		require.ErrorIs(t, err, reaper.ErrNotFound)
	})
}
