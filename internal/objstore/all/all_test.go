package all_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/gcs/gcsopt"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, uri string
		options   map[string]string
		want      []string
	}{
		{"bad scheme", "ftp://bucket/x", nil, []string{`unsupported scheme "ftp"`, "accepted forms"}},
		{"relative path", "data/lance", nil, []string{"relative paths are not accepted"}},
		{"empty", "", nil, []string{"empty"}},
		{"file with storage option", dir, map[string]string{"aws_region": "us-east-1"}, []string{`storage option "aws_region" ` + all.Default().TakesOptions()}},
		{"file URI with storage option", "file://" + dir, map[string]string{"allow_http": "true"}, []string{`storage option "allow_http" ` + all.Default().TakesOptions()}},
		{"missing directory", dir + "/nope", nil, []string{"does not exist"}},
		{"s3 unknown option", "s3://bkt/p", map[string]string{"aws_regoin": "x"}, []string{`unknown storage option "aws_regoin"`, "accepted: "}},
		{"s3 http without allow_http", "s3://bkt", map[string]string{"aws_endpoint": "http://127.0.0.1:1"}, []string{"allow_http=true"}},
		{"s3 missing bucket", "s3:///p", nil, []string{"missing bucket"}},
		{"gs missing bucket", "gs:///p", nil, []string{"missing bucket"}},
		{"gs unknown option", "gs://bkt/p", map[string]string{"google_service_acount": "x"}, []string{`unknown storage option "google_service_acount"`, "accepted: allow_http, google_application_credentials"}},
		{"gs key not JSON", "gs://bkt", map[string]string{"google_service_account_key": "s3cr3t{"}, []string{"not a JSON service account key"}},
		{"gs http without allow_http", "gs://bkt", map[string]string{"google_service_account_key": `{"gcs_base_url":"http://127.0.0.1:1","disable_oauth":true}`}, []string{"allow_http=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := all.Open(t.Context(), tc.uri, tc.options)
			require.Error(t, err)
			require.Nil(t, st)
			for _, want := range tc.want {
				require.ErrorContains(t, err, want)
			}
		})
	}
}

func TestOpenDispatch(t *testing.T) {
	dir := t.TempDir()
	st, err := all.Open(t.Context(), "file://"+dir, nil)
	require.NoError(t, err)
	require.IsType(t, &local.Store{}, st)
	require.Equal(t, "file://"+dir, st.URI())

	srv := objstoretest.S3(t)
	st, err = all.Open(t.Context(), srv.URI("a/b"), srv.Options())
	require.NoError(t, err)
	require.IsType(t, &s3.Store{}, st)
	require.Equal(t, srv.URI("a/b"), st.URI())
	require.NotContains(t, st.URI(), srv.SecretKey)
	_, err = st.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err, "put through the opened store")

	gsrv := objstoretest.GCS(t)
	st, err = all.Open(t.Context(), gsrv.URI("a/b"), gsrv.Options())
	require.NoError(t, err)
	require.IsType(t, &gcs.Store{}, st)
	require.Equal(t, gsrv.URI("a/b"), st.URI())
	_, err = st.Put(t.Context(), "k", []byte("v"))
	require.NoError(t, err, "put through the opened gcs store")
}

func openMemory(context.Context, objstore.Location, map[string]string, objstore.OpenEnv) (objstore.Store, error) {
	return memstore.New(), nil
}

func TestRegistry(t *testing.T) {
	r := all.NewRegistry()
	fake := objstore.Backend{Scheme: local.Scheme, Forms: local.Backend().Forms, Open: openMemory}
	require.NoError(t, r.Register(fake))
	require.ErrorContains(t, r.Register(fake), "already registered")
	require.ErrorContains(t, r.Register(objstore.Backend{Scheme: "gs", Forms: []objstore.URIForm{objstore.BucketForm("gs")}}), "Open and at least one URI form are required")
	require.ErrorContains(t, r.Register(objstore.Backend{Scheme: "gs", Open: openMemory}), "Open and at least one URI form are required")

	_, err := r.Open(t.Context(), "s3://bkt", nil, objstore.OpenEnv{})
	require.ErrorContains(t, err, `unsupported scheme "s3" (accepted forms: /abs/path, file:///abs/path)`)
	schemes := all.Default().Schemes()
	require.Subset(t, schemes, []objstore.Scheme{azure.Scheme, local.Scheme, gcs.Scheme, s3.Scheme})
	require.True(t, slices.IsSorted(schemes), "sorted: %v", schemes)
}

// TestRegisterForms: each form a backend declares is one the registry can
// tell from every other, and a form without a parse hook is the backend's
// own scheme://bucket/prefix.
func TestRegisterForms(t *testing.T) {
	parse := func(uri string) (objstore.Location, error) { return objstore.Location{Scheme: "x", Bucket: "b"}, nil }
	for _, tc := range []struct {
		name  string
		forms []objstore.URIForm
		want  string
	}{
		{"a bucket form of another scheme", []objstore.URIForm{objstore.BucketForm("y")}, `a form without Parse is x://bucket/prefix`},
		{"a taken prefix", []objstore.URIForm{{Prefix: "s3://", Syntax: "s3://x", Parse: parse}}, `prefix "s3://" is taken`},
		{"the same prefix twice", []objstore.URIForm{objstore.BucketForm("x"), {Prefix: "x://", Syntax: "x://b", Parse: parse}}, `prefix "x://" is taken`},
		{"no syntax", []objstore.URIForm{{Prefix: "x://", Parse: parse}}, "prefix and syntax are required"},
		{"a form of its own", []objstore.URIForm{{Prefix: "xa://", Syntax: "xa://b", Parse: parse}, objstore.BucketForm("x")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := all.NewRegistry()
			require.NoError(t, r.Register(s3.Backend()))
			err := r.Register(objstore.Backend{Scheme: "x", Forms: tc.forms, Open: openMemory})
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, r.Forms(), 1+len(tc.forms))
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, []objstore.Scheme{s3.Scheme}, r.Schemes(), "a refused backend is not registered")
		})
	}
}

// TestDefaultForms pins the root-URI forms reaper accepts, in the order
// help text and errors list them (a backend added later may follow), and
// the backend each parses to.
func TestDefaultForms(t *testing.T) {
	r := all.Default()
	want := []string{"/abs/path", "file:///abs/path", "s3://bucket/prefix", "gs://bucket/prefix",
		"az://container/prefix", "abfss://container@account.dfs.core.windows.net/prefix"}
	require.Equal(t, want, objstore.Syntaxes(r.Forms())[:len(want)])
	for uri, want := range map[string]objstore.Scheme{
		"/data/db": local.Scheme, "file:///data/db": local.Scheme, "s3://b/db": s3.Scheme, "gs://b/db": gcs.Scheme,
		"az://c/db": azure.Scheme, "abfss://c@acct.dfs.core.windows.net/db": azure.Scheme,
		"s3+ddb://b/db?ddbTableName=commits": s3ddb.Scheme,
	} {
		loc, b, err := r.Resolve(uri)
		require.NoError(t, err, uri)
		require.Equal(t, want, loc.Scheme, uri)
		require.Equal(t, want, b.Scheme, uri)
		again, err := r.ParseLocation(loc.String())
		require.NoError(t, err, "canonical URI of %s", uri)
		require.Equal(t, loc, again, "%s names the same root as %s", loc, uri)
	}
}

// TestOptionsFromDescriptors pins that validation and secrecy come from the
// backends' own descriptors, not from a list kept beside them.
func TestOptionsFromDescriptors(t *testing.T) {
	r := all.Default()
	for _, b := range []objstore.Backend{s3.Backend(), azure.Backend(), s3ddb.Backend()} {
		for _, o := range b.Options {
			require.Equal(t, o.Secret, r.IsSecretOption(o.Name), o.Name)
		}
	}
	require.True(t, r.IsSecretOption(s3opt.SecretAccessKey))
	require.True(t, r.IsSecretOption(s3opt.SessionToken))
	require.False(t, r.IsSecretOption(s3opt.AccessKeyID))
	require.Equal(t, []string{"allow_http", "aws_access_key_id", "aws_endpoint", "aws_region", "aws_secret_access_key",
		"aws_session_token", "aws_virtual_hosted_style_request"}, r.OptionNames(s3.Scheme))
	require.Empty(t, r.OptionNames(local.Scheme))
	require.Equal(t, []string{"allow_http", "google_application_credentials", "google_service_account",
		"google_service_account_key"}, r.OptionNames(gcs.Scheme))
	require.True(t, r.IsSecretOption(gcsopt.ServiceAccountKey))
	require.False(t, r.IsSecretOption(gcsopt.ServiceAccount), "a path, not a secret")
	today := all.NewRegistry()
	for _, b := range []objstore.Backend{local.Backend(), s3.Backend(), gcs.Backend(), azure.Backend()} {
		require.NoError(t, today.Register(b))
	}
	require.Equal(t, "applies to az://, gs:// and s3:// roots only", today.TakesOptions())
	require.Equal(t, "s3://, gs://, az:// and abfss://", today.OptionForms())
	require.Equal(t, "/abs/path, file:///abs/path, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix or abfss://container@account.dfs.core.windows.net/prefix", today.FormList())

	// A backend without its own CheckOptions accepts exactly its names.
	fake := all.NewRegistry()
	require.NoError(t, fake.Register(objstore.Backend{
		Scheme:  s3.Scheme,
		Forms:   []objstore.URIForm{objstore.BucketForm(s3.Scheme)},
		Options: []objstore.StorageOption{{Name: "b"}, {Name: "a", Secret: true}},
		Open:    openMemory,
	}))
	require.NoError(t, fake.CheckOptions(s3.Scheme, map[string]string{"a": "1", "b": "2"}))
	require.EqualError(t, fake.CheckOptions(s3.Scheme, map[string]string{"c": "1"}), `unknown storage option "c" (accepted: b, a)`)
	require.True(t, fake.IsSecretOption("a"))
}

// TestEveryBackendHasATestServer fails when a backend is registered in
// Default without its entry in objstoretest.Backends: without it, no
// conformance, lifecycle, lock, ledger or command suite runs on it
// (ForEachBackend), and the backend would ship untested. Its help and docs
// are checked by cmd/reaper/storehelp_test.go and docs_test.go.
func TestEveryBackendHasATestServer(t *testing.T) {
	var tested []objstore.Scheme
	for _, b := range objstoretest.Backends() {
		if b.Scheme != "" {
			tested = append(tested, b.Scheme)
		}
	}
	for _, s := range all.Default().Schemes() {
		require.Contains(t, tested, s, "backend %q has no entry in objstoretest.Backends (internal/objstore/objstoretest/backends.go)", s)
	}
	for _, b := range objstoretest.Shared() {
		require.NotEmpty(t, b.Scheme, "%s: a shared backend is one a root URI names", b.Name)
	}
}
