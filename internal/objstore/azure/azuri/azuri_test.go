package azuri_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure/azuri"
)

func TestParseLocationAzure(t *testing.T) {
	for _, tc := range []struct {
		uri     string
		want    objstore.Location
		canon   string
		wantErr string // substring; the error always lists the accepted forms
	}{
		{uri: "az://lake", want: objstore.Location{Scheme: azuri.Scheme, Bucket: "lake"}, canon: "az://lake"},
		{uri: "az://lake/", want: objstore.Location{Scheme: azuri.Scheme, Bucket: "lake"}, canon: "az://lake"},
		{uri: "az://lake/db/prod/", want: objstore.Location{Scheme: azuri.Scheme, Bucket: "lake", Prefix: "db/prod"}, canon: "az://lake/db/prod"},
		{
			uri:   "abfss://lake@acct.dfs.core.windows.net/db",
			want:  objstore.Location{Scheme: azuri.Scheme, Bucket: "lake", Prefix: "db", Form: azuri.ABFSS{Account: "acct"}},
			canon: "abfss://lake@acct.dfs.core.windows.net/db",
		},
		{
			uri:   "abfss://lake@acct.blob.core.windows.net",
			want:  objstore.Location{Scheme: azuri.Scheme, Bucket: "lake", Form: azuri.ABFSS{Account: "acct"}},
			canon: "abfss://lake@acct.dfs.core.windows.net",
		},
		{uri: "az://", wantErr: "missing container"},
		{uri: "az:///db", wantErr: "missing container"},
		{uri: "az://lake@acct/db", wantErr: "az:// roots name the container only"},
		{uri: "az://lake/a/../b", wantErr: `prefix has an empty, "." or ".." segment`},
		{uri: "az://lake/db?sv=1", wantErr: "query strings"},
		{uri: "abfss://acct.dfs.core.windows.net/db", wantErr: "abfss://container@account.dfs.core.windows.net/prefix"},
		{uri: "abfss://lake@acct.example.com/db", wantErr: "host must be account.dfs.core.windows.net"},
		{uri: "abfss://lake@a.b.dfs.core.windows.net/db", wantErr: "host must be account.dfs.core.windows.net"},
		{uri: "abfs://lake@acct.dfs.core.windows.net/db", wantErr: `unsupported scheme "abfs"`},
		{uri: "azure://lake/db", wantErr: `unsupported scheme "azure"`},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			loc, err := objstore.ParseLocation(tc.uri, azuri.Forms())
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "az://container/prefix", "the error names the supported form")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, loc, "location: got/want")
			require.Equal(t, tc.canon, loc.String(), "canonical URI: got/want")
			require.Equal(t, tc.want.Prefix, loc.KeyPath(), "an az root's key path is its prefix")
			require.Equal(t, azuri.Account(tc.want), azuri.Account(loc), "account")
		})
	}
}
