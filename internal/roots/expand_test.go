package roots_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

func uris(rs []roots.Root) []string {
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
	// Expand sorts by URI, and where TMPDIR sorts beside "/kept" depends on the machine.
	want := []string{"file:///kept", "file://" + dir + "/a-tables", "file://" + dir + "/b-markers"}
	slices.Sort(want)
	require.Equal(t, want, uris(got), "the other roots are still returned")
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

// Discovery finds the same children on every backend: a child holding a
// table or a marker is a root; an empty one, one of other files, a table
// deeper down, a table or marker at the parent's own level are not.
func TestExpandOnEveryBackend(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		t.Parallel()
		r := b.NewRoot(t)
		ctx := t.Context()
		setup := r.Open(t)
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
		cfg.Discover = []config.Root{{URI: r.Sub("tenants/*/"), StorageOptions: r.Options}}
		require.NoError(t, cfg.ValidateForPass())
		got, err := roots.Expand(ctx, cfg, all.Open)
		require.NoError(t, err)
		var want []string
		for _, child := range []string{"a-tables", "b-markers"} {
			loc, err := all.ParseLocation(r.Sub("tenants/" + child))
			require.NoError(t, err)
			want = append(want, loc.String())
		}
		require.Equal(t, want, uris(got))
		for _, gr := range got {
			require.Equal(t, r.Options, gr.StorageOptions, "the pattern's storage options")
			st, err := all.Open(ctx, gr.URI, gr.StorageOptions)
			require.NoError(t, err)
			entries := 0
			require.NoError(t, st.List(ctx, "", func(p objstore.Page) error {
				entries += len(p.Prefixes) + len(p.Objects)
				return nil
			}))
			require.Equal(t, 1, entries, "%s opens and lists its table or marker", gr.URI)
		}
	}, objstoretest.Shared()...)
}

// A pattern at a bucket's root lists the bucket's top level.
func TestExpandS3BucketRoot(t *testing.T) {
	t.Parallel()
	srv := objstoretest.S3(t)
	ctx := t.Context()
	setup, err := all.Open(ctx, srv.URI(""), srv.Options())
	require.NoError(t, err)
	for _, k := range []string{"tenants/e.lance/_versions/1.manifest", "tenants/notes.deleted", "elsewhere/f/g.lance/x"} {
		_, err := setup.Put(ctx, k, []byte("x"))
		require.NoError(t, err, k)
	}
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: srv.URI("") + "/*", StorageOptions: srv.Options()}}
	got, err := roots.Expand(ctx, cfg, all.Open)
	require.NoError(t, err)
	require.Equal(t, []string{srv.URI("tenants")}, uris(got), "tenants/ holds e.lance/ and notes.deleted; elsewhere/ nothing at its top level")
}

// failAfter serves the first page of prefix and then fails.
type failAfter struct {
	objstore.Store
	prefix string
}

func (f failAfter) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	served := false
	return onePage{Store: f.Store, pages: new(int)}.List(ctx, prefix, func(p objstore.Page) error {
		if served && prefix == f.prefix {
			return errors.New("access denied")
		}
		served = true
		return fn(p)
	})
}

// A kept child carries its whole listing, every page of it, so the pass
// plans from it; a child whose later page fails is kept without one.
func TestExpandCarriesTheChildListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "t", "a.lance", "x"))
	mkfile(t, filepath.Join(dir, "t", "b.deleted"))
	mkfile(t, filepath.Join(dir, "t", "c.txt"))
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: dir + "/*/"}}
	cases := []struct {
		name    string
		wrap    func(objstore.Store, *int) objstore.Store
		pages   int
		listing bool
	}{
		{"every page read", func(s objstore.Store, n *int) objstore.Store { return onePage{Store: s, pages: n} }, 4, true},
		{"a later page fails", func(s objstore.Store, _ *int) objstore.Store { return failAfter{Store: s, prefix: "t/"} }, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pages := 0
			open := func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
				st, err := all.Open(ctx, uri, opts)
				return tc.wrap(st, &pages), err
			}
			got, err := roots.Expand(t.Context(), cfg, open)
			require.NoError(t, err)
			require.Equal(t, []string{"file://" + dir + "/t"}, uris(got))
			require.Equal(t, tc.pages, pages, "one page of the parent, each of the child's")
			require.Equal(t, tc.listing, got[0].Listing != nil, "listing carried")
		})
	}
}

// The listings discovery carries are bounded in all: children are kept in
// order while their names fit the budget; a child past it is still found,
// carries no listing (its plan lists it) and stops being read as soon as
// it is over.
func TestExpandCarriesListingsWithinABudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"a/t1.lance/x", "a/t2.deleted", "a/t3.lance/x", "b/u1.lance/x", "b/u2.deleted", "c/v1.lance/x", "c/v2.lance/x", "c/v3.lance/x", "c/v4.lance/x", "c/v5.lance/x"} {
		mkfile(t, filepath.Join(dir, p))
	}
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: dir + "/*/"}}
	pages := 0
	open := func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error) {
		st, err := all.Open(ctx, uri, opts)
		return onePage{Store: st, pages: &pages}, err
	}
	got, err := roots.ExpandWithBudget(t.Context(), cfg, open, 4)
	require.NoError(t, err)
	require.Equal(t, []string{"file://" + dir + "/a", "file://" + dir + "/b", "file://" + dir + "/c"}, uris(got))
	require.NotNil(t, got[0].Listing, "a: 3 names, within the budget of 4")
	require.Equal(t, 3, got[0].Listing.Len())
	require.Nil(t, got[1].Listing, "b: 2 more names are past the budget")
	require.Nil(t, got[2].Listing, "c: 5 names")
	// The parent's 3 prefixes; a's 3 entries; b's first 2 (its second
	// name is past the budget's last one); c's first 2 likewise.
	require.Equal(t, 3+3+2+2, pages, "pages read")
}

// A tenant whose tables are all in LanceDB namespaces (the manifest
// layout: a catalog and <8 hex>_<object id>/ directories) is a database
// root; a namespaced table's directory at the parent level is not.
func TestExpandFindsNamespacedRoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "f-namespaced", "76cba2fc_tenant_a$inner", "_versions", "1.manifest"))
	mkfile(t, filepath.Join(dir, "g-catalog", "__manifest", "_versions", "1.manifest"))
	mkfile(t, filepath.Join(dir, "0a1b2c3d_ns$t", "_versions", "1.manifest"))
	mkfile(t, filepath.Join(dir, "h-other", "backup", "x.bin"))
	cfg := config.Default()
	cfg.Discover = []config.Root{{URI: dir + "/*/"}}
	got, err := roots.Expand(t.Context(), cfg, all.Open)
	require.NoError(t, err)
	require.Equal(t, []string{"file://" + dir + "/f-namespaced", "file://" + dir + "/g-catalog"}, uris(got))
}
