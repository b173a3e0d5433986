package azure_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
)

const secret = "c2VjcmV0LXZhbHVl" // base64, so it parses as an account key

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    azure.Options
		wantErr []string // substrings of the error
	}{
		{name: "empty", in: nil, want: azure.Options{}},
		{
			name: "account key",
			in:   map[string]string{"azure_storage_account_name": "acct", "azure_storage_account_key": secret},
			want: azure.Options{AccountName: "acct", AccountKey: secret},
		},
		{
			name: "alias of the key",
			in:   map[string]string{"azure_storage_access_key": secret},
			want: azure.Options{AccountKey: secret},
		},
		{
			name: "service principal",
			in:   map[string]string{"azure_client_id": "id", "azure_client_secret": secret, "azure_tenant_id": "tn"},
			want: azure.Options{ClientID: "id", ClientSecret: secret, TenantID: "tn"},
		},
		{
			name: "workload identity",
			in:   map[string]string{"azure_client_id": "id", "azure_tenant_id": "tn", "azure_federated_token_file": "/var/run/token"},
			want: azure.Options{ClientID: "id", TenantID: "tn", FederatedTokenFile: "/var/run/token"},
		},
		{name: "sas", in: map[string]string{"azure_storage_sas_key": "sv=2024&sig=" + secret}, want: azure.Options{SASKey: "sv=2024&sig=" + secret}},
		{name: "emulator", in: map[string]string{"azure_storage_use_emulator": "true"}, want: azure.Options{UseEmulator: true}},
		{
			name: "http endpoint",
			in:   map[string]string{"azure_storage_endpoint": "http://127.0.0.1:10000/devstoreaccount1", "allow_http": "true"},
			want: azure.Options{Endpoint: "http://127.0.0.1:10000/devstoreaccount1", AllowHTTP: true},
		},
		{
			name:    "unknown key",
			in:      map[string]string{"azure_storage_acount_name": "x"},
			wantErr: []string{`unknown storage option "azure_storage_acount_name"`, "accepted: ", "azure_storage_account_name", "azure_storage_sas_key"},
		},
		{name: "s3 key on az", in: map[string]string{"aws_region": "x"}, wantErr: []string{`unknown storage option "aws_region"`}},
		{
			name:    "two spellings",
			in:      map[string]string{"azure_storage_account_key": secret, "azure_storage_access_key": secret},
			wantErr: []string{"are the same option"},
		},
		{
			name:    "two credentials",
			in:      map[string]string{"azure_storage_account_key": secret, "azure_storage_sas_key": "sig=" + secret},
			wantErr: []string{"give one credential"},
		},
		{name: "secret without id", in: map[string]string{"azure_client_secret": secret}, wantErr: []string{"azure_client_secret needs azure_client_id and azure_tenant_id"}},
		{name: "http without allow_http", in: map[string]string{"azure_storage_endpoint": "http://h:1"}, wantErr: []string{"allow_http=true"}},
		{name: "endpoint with sas", in: map[string]string{"azure_storage_endpoint": "https://h/acct?sig=" + secret}, wantErr: []string{"query in the URL"}},
		{name: "endpoint without scheme", in: map[string]string{"azure_storage_endpoint": "h:1"}, wantErr: []string{"http(s)://"}},
		{
			name:    "emulator and endpoint",
			in:      map[string]string{"azure_storage_use_emulator": "true", "azure_storage_endpoint": "http://h:1"},
			wantErr: []string{"AZURITE_BLOB_STORAGE_URL"},
		},
		{name: "bad bool", in: map[string]string{"azure_storage_use_emulator": "yes"}, wantErr: []string{"true or false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := azure.ParseOptions(tc.in)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, got, "options: got/want")
				return
			}
			require.Error(t, err)
			for _, want := range tc.wantErr {
				require.Contains(t, err.Error(), want)
			}
			require.NotContains(t, err.Error(), secret, "secret in error")
		})
	}
}

func TestOptionsStringHidesSecrets(t *testing.T) {
	o := azure.Options{AccountName: "acct", AccountKey: secret, SASKey: secret, ClientSecret: secret}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), o.String()} {
		require.NotContains(t, s, secret)
		require.Contains(t, s, "acct")
	}
}

// The registry redacts by the descriptor's Secret flag: every spelling of
// a key, SAS or client secret is secret, nothing else is.
func TestSecretOptionsDeclared(t *testing.T) {
	r := all.Default()
	for name, want := range map[string]bool{
		"azure_storage_account_key": true, "azure_storage_access_key": true, "azure_storage_master_key": true,
		"azure_storage_sas_key": true, "azure_storage_sas_token": true,
		"azure_client_secret": true, "azure_storage_client_secret": true,
		"azure_storage_account_name": false, "azure_client_id": false, "azure_tenant_id": false,
		"azure_storage_endpoint": false, "azure_storage_use_emulator": false,
	} {
		require.Equal(t, want, r.IsSecretOption(name), "secret %s: got/want", name)
	}
	require.NoError(t, r.CheckOptions(azure.Scheme, map[string]string{"azure_storage_account_name": "a"}))
}

func TestOpenErrors(t *testing.T) {
	t.Setenv("AZURE_STORAGE_ACCOUNT_NAME", "")
	for _, tc := range []struct {
		uri     string
		opts    map[string]string
		wantErr string
	}{
		{uri: "s3://b/p", wantErr: "not an az:// root"},
		{uri: "az://c/p", opts: map[string]string{"azure_storage_account_key": secret}, wantErr: "no storage account: set the storage option azure_storage_account_name"},
		{uri: "az://c/p", opts: map[string]string{"azure_storage_account_name": "a", "azure_storage_account_key": "not base64 " + secret}, wantErr: "azure_storage_account_key: not a base64 account key"},
		{uri: "abfss://c@acct.dfs.core.windows.net/p", opts: map[string]string{"azure_storage_account_name": "other"}, wantErr: "names another account"},
	} {
		t.Run(tc.uri+" "+tc.wantErr, func(t *testing.T) {
			loc, err := all.ParseLocation(tc.uri)
			require.NoError(t, err)
			_, err = azure.Open(t.Context(), loc, tc.opts, objstore.OpenEnv{})
			require.ErrorContains(t, err, tc.wantErr)
			require.NotContains(t, err.Error(), secret)
		})
	}
	// The account from the abfss:// host, a key from the options: no request
	// is sent at Open.
	loc, err := all.ParseLocation("abfss://c@acct.dfs.core.windows.net/p")
	require.NoError(t, err)
	st, err := azure.Open(t.Context(), loc, map[string]string{"azure_storage_account_key": secret}, objstore.OpenEnv{})
	require.NoError(t, err)
	require.Equal(t, "abfss://c@acct.dfs.core.windows.net/p", st.URI())
	// The account from the environment, as object_store reads it.
	t.Setenv("AZURE_STORAGE_ACCOUNT_NAME", "envacct")
	loc, err = all.ParseLocation("az://c")
	require.NoError(t, err)
	_, err = azure.Open(t.Context(), loc, map[string]string{"azure_storage_account_key": secret}, objstore.OpenEnv{})
	require.NoError(t, err)
}
