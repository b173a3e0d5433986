package objstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// KeyPath and Child are the scheme-independent view of a location that
// discovery, the ledger and config checks use.
func TestLocationKeyPathAndChild(t *testing.T) {
	for _, tc := range []struct {
		uri, keyPath, child string
	}{
		{"/data/lance", "/data/lance", "file:///data/lance/t1"},
		{"file:///data/lance/", "/data/lance", "file:///data/lance/t1"},
		{"s3://bkt", "", "s3://bkt/t1"},
		{"s3://bkt/tenants/a", "tenants/a", "s3://bkt/tenants/a/t1"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			loc, err := objstore.ParseLocation(tc.uri, fuzzForms())
			require.NoError(t, err)
			require.Equal(t, tc.keyPath, loc.KeyPath())
			require.Equal(t, tc.child, loc.Child("t1").String())
		})
	}
}

// TestParseLocationGS pins the gs:// forms accepted and refused, the way
// Lance spells a Google Cloud Storage root.
func TestParseLocationGS(t *testing.T) {
	for _, tc := range []struct {
		uri     string
		want    objstore.Location
		wantErr string
	}{
		{uri: "gs://lake", want: objstore.Location{Scheme: "gs", Bucket: "lake"}},
		{uri: "gs://lake/", want: objstore.Location{Scheme: "gs", Bucket: "lake"}},
		{uri: "gs://lake/db/tenant-1/", want: objstore.Location{Scheme: "gs", Bucket: "lake", Prefix: "db/tenant-1"}},
		{uri: "gs:///db", wantErr: "missing bucket"},
		{uri: "gs://lake/db?x=1", wantErr: "query strings"},
		{uri: "gs://lake/a//b", wantErr: `empty, "." or ".." segment`},
		{uri: "gs://lake/a/../b", wantErr: `empty, "." or ".." segment`},
		{uri: "gcs://lake/db", wantErr: `unsupported scheme "gcs"`},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := objstore.ParseLocation(tc.uri, fuzzForms())
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "gs://bucket/prefix", "the error names the accepted form")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := objstore.ParseLocation(got.String(), fuzzForms())
			require.NoError(t, err)
			require.Equal(t, got, again, "canonical URI %s parses back", got)
		})
	}
}

// TestParseLocationDispatch: a URI goes to the form whose prefix it
// begins with, the longest when several do; one that begins with none is
// refused naming its scheme, or as a relative path when a form takes bare
// paths.
func TestParseLocationDispatch(t *testing.T) {
	long := objstore.URIForm{Prefix: "s3://special/", Syntax: "s3://special/prefix", Parse: func(uri string) (objstore.Location, error) {
		return objstore.Location{Scheme: "special", Bucket: "special"}, nil
	}}
	forms := append(fuzzForms(), long)
	loc, err := objstore.ParseLocation("s3://special/db", forms)
	require.NoError(t, err)
	require.Equal(t, objstore.Scheme("special"), loc.Scheme, "the longest prefix wins")
	loc, err = objstore.ParseLocation("s3://specialist/db", forms)
	require.NoError(t, err)
	require.Equal(t, objstore.Location{Scheme: "s3", Bucket: "specialist", Prefix: "db"}, loc)

	_, err = objstore.ParseLocation("data/db", fuzzForms())
	require.EqualError(t, err, `root URI "data/db": relative paths are not accepted; use an absolute path (accepted forms: /abs/path, file:///abs/path, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix, abfss://container@account.dfs.core.windows.net/prefix, s3+ddb://bucket/prefix?ddbTableName=T)`)
	_, err = objstore.ParseLocation("data/db", []objstore.URIForm{objstore.BucketForm("s3")})
	require.EqualError(t, err, `root URI "data/db": not a URI (accepted forms: s3://bucket/prefix)`)
	_, err = objstore.ParseLocation("ftp://h/db", []objstore.URIForm{objstore.BucketForm("s3")})
	require.EqualError(t, err, `root URI "ftp://h/db": unsupported scheme "ftp" (accepted forms: s3://bucket/prefix)`)
}
