package all_test

import (
	"context"
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
		{"file with storage option", dir, map[string]string{"aws_region": "us-east-1"}, []string{`storage option "aws_region" applies to az://, gs:// and s3:// roots only`}},
		{"file URI with storage option", "file://" + dir, map[string]string{"allow_http": "true"}, []string{`storage option "allow_http" applies to az://, gs:// and s3:// roots only`}},
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

func TestRegistry(t *testing.T) {
	r := all.NewRegistry()
	fake := objstore.Backend{
		Scheme: objstore.SchemeFile,
		Open: func(context.Context, objstore.Location, map[string]string, objstore.OpenEnv) (objstore.Store, error) {
			return memstore.New(), nil
		},
	}
	require.NoError(t, r.Register(fake))
	require.ErrorContains(t, r.Register(fake), "already registered")
	require.ErrorContains(t, r.Register(objstore.Backend{Scheme: "gs"}), "Open are required")

	_, err := r.Open(t.Context(), "s3://bkt", nil, objstore.OpenEnv{})
	require.ErrorContains(t, err, `no backend for scheme "s3"`)
	require.Equal(t, []objstore.Scheme{objstore.SchemeAzure, objstore.SchemeFile, objstore.SchemeGS, objstore.SchemeS3}, all.Default().Schemes())
}

// TestOptionsFromDescriptors pins that validation and secrecy come from the
// backends' own descriptors, not from a list kept beside them.
func TestOptionsFromDescriptors(t *testing.T) {
	r := all.Default()
	for _, b := range []objstore.Backend{s3.Backend(), azure.Backend()} {
		for _, o := range b.Options {
			require.Equal(t, o.Secret, r.IsSecretOption(o.Name), o.Name)
		}
	}
	require.True(t, r.IsSecretOption(s3opt.SecretAccessKey))
	require.True(t, r.IsSecretOption(s3opt.SessionToken))
	require.False(t, r.IsSecretOption(s3opt.AccessKeyID))
	require.Equal(t, []string{"allow_http", "aws_access_key_id", "aws_endpoint", "aws_region", "aws_secret_access_key",
		"aws_session_token", "aws_virtual_hosted_style_request"}, r.OptionNames(objstore.SchemeS3))
	require.Empty(t, r.OptionNames(objstore.SchemeFile))
	require.Equal(t, []string{"allow_http", "google_application_credentials", "google_service_account",
		"google_service_account_key"}, r.OptionNames(objstore.SchemeGS))
	require.True(t, r.IsSecretOption(gcsopt.ServiceAccountKey))
	require.False(t, r.IsSecretOption(gcsopt.ServiceAccount), "a path, not a secret")
	require.Equal(t, "applies to az://, gs:// and s3:// roots only", r.TakesOptions())

	// A backend without its own CheckOptions accepts exactly its names.
	fake := all.NewRegistry()
	require.NoError(t, fake.Register(objstore.Backend{
		Scheme:  objstore.SchemeS3,
		Options: []objstore.StorageOption{{Name: "b"}, {Name: "a", Secret: true}},
		Open: func(context.Context, objstore.Location, map[string]string, objstore.OpenEnv) (objstore.Store, error) {
			return memstore.New(), nil
		},
	}))
	require.NoError(t, fake.CheckOptions(objstore.SchemeS3, map[string]string{"a": "1", "b": "2"}))
	require.EqualError(t, fake.CheckOptions(objstore.SchemeS3, map[string]string{"c": "1"}), `unknown storage option "c" (accepted: b, a)`)
	require.True(t, fake.IsSecretOption("a"))
}
