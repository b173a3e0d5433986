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
			loc, err := objstore.ParseLocation(tc.uri)
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
		{uri: "gs://lake", want: objstore.Location{Scheme: objstore.SchemeGS, Bucket: "lake"}},
		{uri: "gs://lake/", want: objstore.Location{Scheme: objstore.SchemeGS, Bucket: "lake"}},
		{uri: "gs://lake/db/tenant-1/", want: objstore.Location{Scheme: objstore.SchemeGS, Bucket: "lake", Prefix: "db/tenant-1"}},
		{uri: "gs:///db", wantErr: "missing bucket"},
		{uri: "gs://lake/db?x=1", wantErr: "query strings"},
		{uri: "gs://lake/a//b", wantErr: `empty, "." or ".." segment`},
		{uri: "gs://lake/a/../b", wantErr: `empty, "." or ".." segment`},
		{uri: "gcs://lake/db", wantErr: `unsupported scheme "gcs"`},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := objstore.ParseLocation(tc.uri)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "gs://bucket/prefix", "the error names the accepted form")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := objstore.ParseLocation(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again, "canonical URI %s parses back", got)
		})
	}
}
