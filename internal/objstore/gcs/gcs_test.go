package gcs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// openTestStore opens a store on a fresh fake-gcs-server bucket under
// prefix.
func openTestStore(t *testing.T, prefix string, pageSize int) (objstoretest.GCSServer, *gcs.Store) {
	t.Helper()
	srv := objstoretest.GCS(t)
	return srv, openOn(t, srv, prefix, pageSize)
}

func openOn(t testing.TB, srv objstoretest.GCSServer, prefix string, pageSize int) *gcs.Store {
	t.Helper()
	loc, err := all.ParseLocation(srv.URI(prefix))
	require.NoError(t, err, "parse %s", srv.URI(prefix))
	st, err := gcs.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	require.NoError(t, err, "open %s", srv.URI(prefix))
	st.PageSize = pageSize
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		_, st := openTestStore(t, "", 0)
		return st
	})
}

func TestConformanceUnderPrefix(t *testing.T) {
	const pageSize = 7 // small pages: every paging path is crossed cheaply
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		srv, st := openTestStore(t, "some/prefix", pageSize)
		// Neighbours outside the root: the suite's exact listings fail if
		// they leak in, and its deletes must leave them alone.
		neighbours := []string{"some/prefixed", "some/other/x", "top"}
		for _, k := range neighbours {
			srv.PutRaw(t, k, []byte(k))
		}
		t.Cleanup(func() {
			for _, k := range neighbours {
				assert.True(t, srv.HasRaw(t, k), "neighbour %s outside the root must survive", k)
			}
		})
		return st
	}, objstoretest.WithPageSize(pageSize))
}

func TestPrefixIsolation(t *testing.T) {
	srv := objstoretest.GCS(t)
	inner, outer := openOn(t, srv, "some/prefix", 0), openOn(t, srv, "", 0)
	ctx := t.Context()
	_, err := outer.Put(ctx, "some/prefixed", []byte("neighbour"))
	require.NoError(t, err)
	_, err = inner.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)

	var keys []string
	require.NoError(t, inner.Walk(ctx, "", func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	}))
	require.Equal(t, []string{"k"}, keys, "keys under some/prefix: got/want")
	_, _, err = outer.Get(ctx, "some/prefix/k", 1<<20)
	require.NoError(t, err, "inner key seen from the bucket root")
	require.Equal(t, "gs://"+srv.Bucket+"/some/prefix", inner.URI())
}
