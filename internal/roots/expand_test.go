package roots_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
)

func mkfile(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o644))
}

// tenants lays out a parent with a table root, a marker-only root, an
// empty directory and a directory of other files.
func tenants(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "a-tables", "x.lance", "_versions", "1.manifest"))
	mkfile(t, filepath.Join(dir, "b-markers", "y.deleted"))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "c-empty"), 0o755))
	mkfile(t, filepath.Join(dir, "d-other", "readme.txt"))
	mkfile(t, filepath.Join(dir, "d-other", "nested", "z.lance", "data", "0.lance")) // too deep: not a root
	mkfile(t, filepath.Join(dir, "e.lance", "_versions", "1.manifest"))              // a table at the parent level is not a root
	mkfile(t, filepath.Join(dir, "notes.deleted"))                                   // an object, not a child
	return dir
}

func uris(rs []config.Root) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URI
	}
	return out
}

func TestExpandLocal(t *testing.T) {
	t.Parallel()
	dir := tenants(t)
	other := t.TempDir()
	for _, pattern := range []string{dir + "/*/", dir + "/*", "file://" + dir + "/*/"} {
		cfg := config.Default()
		cfg.Roots = []config.Root{{URI: other}, {URI: dir + "/b-markers/"}} // b also discovered: once
		cfg.Discover = []config.Root{{URI: pattern}}
		got, err := roots.Expand(t.Context(), cfg, all.Open)
		require.NoError(t, err, pattern)
		want := []string{"file://" + dir + "/a-tables", "file://" + dir + "/b-markers", "file://" + other}
		if other < dir {
			want = []string{"file://" + other, "file://" + dir + "/a-tables", "file://" + dir + "/b-markers"}
		}
		require.Equal(t, want, uris(got), pattern)
		for _, r := range got {
			_, err := all.Open(t.Context(), r.URI, r.StorageOptions)
			require.NoError(t, err, "expanded root %s opens", r.URI)
		}
	}
}

func TestExpandNoDiscover(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Roots = []config.Root{{URI: "s3://b/z"}, {URI: "/data/a/"}, {URI: "file:///data/a"}}
	opened := 0
	got, err := roots.Expand(t.Context(), cfg, func(context.Context, string, map[string]string) (objstore.Store, error) {
		opened++
		return nil, errors.New("unexpected open")
	})
	require.NoError(t, err)
	require.Zero(t, opened, "configured roots are not opened")
	require.Equal(t, []string{"file:///data/a", "s3://b/z"}, uris(got))
}

func TestExpandPartialErrors(t *testing.T) {
	t.Parallel()
	dir := tenants(t)
	missing := filepath.Join(t.TempDir(), "nope")
	cfg := config.Default()
	cfg.Roots = []config.Root{{URI: "relative/root"}, {URI: "/kept"}}
	cfg.Discover = []config.Root{{URI: missing + "/*/"}, {URI: dir + "/*/"}, {URI: "/bad/pattern/"}}
	got, err := roots.Expand(t.Context(), cfg, all.Open)
	require.Error(t, err)
	require.ErrorContains(t, err, "discover "+missing+"/*/")
	require.ErrorContains(t, err, "does not exist")
	require.ErrorContains(t, err, `root "relative/root"`)
	require.ErrorContains(t, err, `"/bad/pattern/"`)
	require.Equal(t, []string{"file:///kept", "file://" + dir + "/a-tables", "file://" + dir + "/b-markers"}, uris(got),
		"the other roots are still returned")
}

// failing lists the parent but fails on one child.
type failing struct {
	objstore.Store
	child string
}

func (f failing) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	if prefix == f.child {
		return errors.New("access denied")
	}
	return f.Store.List(ctx, prefix, fn)
}

func TestExpandChildError(t *testing.T) {
	t.Parallel()
	dir := tenants(t)
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: dir + "/*/"}}
	open := func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
		st, err := all.Open(ctx, uri, opts)
		return failing{Store: st, child: "a-tables/"}, err
	}
	got, err := roots.Expand(t.Context(), cfg, open)
	require.ErrorContains(t, err, "list file://"+dir+"/a-tables: access denied")
	require.Equal(t, []string{"file://" + dir + "/b-markers"}, uris(got))
}

func TestExpandCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: tenants(t) + "/*/"}}
	got, err := roots.Expand(ctx, cfg, all.Open)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, got)
}

// onePage serves listings one entry per page, counting pages.
type onePage struct {
	objstore.Store
	pages *int
}

func (o onePage) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	return o.Store.List(ctx, prefix, func(p objstore.Page) error {
		for _, obj := range p.Objects {
			*o.pages++
			if err := fn(objstore.Page{Objects: []objstore.Object{obj}}); err != nil {
				return err
			}
		}
		for _, pfx := range p.Prefixes {
			*o.pages++
			if err := fn(objstore.Page{Prefixes: []string{pfx}}); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestExpandReadsOnePagePerChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "t", "a.txt"))
	mkfile(t, filepath.Join(dir, "t", "b.lance", "x"))
	pages := 0
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: dir + "/*/"}}
	open := func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
		st, err := all.Open(ctx, uri, opts)
		return onePage{Store: st, pages: &pages}, err
	}
	got, err := roots.Expand(t.Context(), cfg, open)
	require.NoError(t, err)
	require.Equal(t, 2, pages, "one page of the parent, one of the child")
	require.Empty(t, got, "only the first page of a child is read")
}

// remoteRoot is a fresh bucket of an object-store test server.
type remoteRoot struct {
	URI     func(prefix string) string
	Options func() map[string]string
}

func TestExpandObjectStores(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) remoteRoot{
		"s3": func(t *testing.T) remoteRoot {
			srv := objstoretest.S3(t)
			return remoteRoot{srv.URI, srv.Options}
		},
		"gcs": func(t *testing.T) remoteRoot {
			srv := objstoretest.GCS(t)
			return remoteRoot{srv.URI, srv.Options}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testExpandObjectStore(t, open(t))
		})
	}
}

func testExpandObjectStore(t *testing.T, srv remoteRoot) {
	ctx := t.Context()
	setup, err := all.Open(ctx, srv.URI(""), srv.Options())
	require.NoError(t, err)
	for _, k := range []string{
		"tenants/a-tables/x.lance/_versions/1.manifest",
		"tenants/b-markers/y.deleted",
		"tenants/d-other/readme.txt",
		"tenants/d-other/nested/z.lance/data/0.lance",
		"tenants/e.lance/_versions/1.manifest",
		"tenants/notes.deleted",
		"elsewhere/f/g.lance/x",
	} {
		_, err := setup.Put(ctx, k, []byte("x"))
		require.NoError(t, err, k)
	}
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: srv.URI("tenants") + "/*/", StorageOptions: srv.Options()}}
	require.NoError(t, cfg.ValidateForPass())
	got, err := roots.Expand(ctx, cfg, all.Open)
	require.NoError(t, err)
	require.Equal(t, []string{srv.URI("tenants/a-tables"), srv.URI("tenants/b-markers")}, uris(got))
	for _, r := range got {
		require.Equal(t, srv.Options(), r.StorageOptions, "the pattern's storage options")
		st, err := all.Open(ctx, r.URI, r.StorageOptions)
		require.NoError(t, err)
		entries := 0
		require.NoError(t, st.List(ctx, "", func(p objstore.Page) error {
			entries += len(p.Prefixes) + len(p.Objects)
			return nil
		}))
		require.Equal(t, 1, entries, "%s opens and lists its table or marker", r.URI)
	}

	// A bucket-root pattern.
	cfg.Discover = []config.Root{{URI: srv.URI("") + "/*", StorageOptions: srv.Options()}}
	got, err = roots.Expand(ctx, cfg, all.Open)
	require.NoError(t, err)
	require.Equal(t, []string{srv.URI("tenants")}, uris(got), "tenants/ holds e.lance/ and notes.deleted; elsewhere/ nothing at its top level")
}
