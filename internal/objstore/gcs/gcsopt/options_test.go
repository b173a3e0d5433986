package gcsopt_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/gcs/gcsopt"
)

func TestParseOptions(t *testing.T) {
	const emulatorKey = `{"gcs_base_url":"http://127.0.0.1:4443","disable_oauth":true,"client_email":"","private_key":"","private_key_id":""}`
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    gcsopt.Options
		wantErr string
	}{
		{name: "none: application default credentials", in: nil, want: gcsopt.Options{}},
		{name: "service account file", in: map[string]string{"google_service_account": "/etc/sa.json"}, want: gcsopt.Options{ServiceAccountPath: "/etc/sa.json"}},
		{name: "adc file", in: map[string]string{"google_application_credentials": "/etc/adc.json"}, want: gcsopt.Options{ApplicationCredentialsPath: "/etc/adc.json"}},
		{name: "emulator key", in: map[string]string{"google_service_account_key": emulatorKey, "allow_http": "TRUE"},
			want: gcsopt.Options{ServiceAccountKey: emulatorKey, Endpoint: "http://127.0.0.1:4443", DisableOAuth: true, AllowHTTP: true}},
		{name: "unknown", in: map[string]string{"google_bucket": "b"}, wantErr: `unknown storage option "google_bucket" (accepted: allow_http, google_application_credentials, google_service_account, google_service_account_key)`},
		{name: "s3 name", in: map[string]string{"aws_endpoint": "http://x"}, wantErr: `unknown storage option "aws_endpoint"`},
		{name: "bad bool", in: map[string]string{"allow_http": "yes"}, wantErr: `allow_http="yes": want true or false`},
		{name: "key not json", in: map[string]string{"google_service_account_key": "hunter2"}, wantErr: "not a JSON service account key"},
		{name: "two sources", in: map[string]string{"google_service_account": "/a", "google_application_credentials": "/b"}, wantErr: "give one credential source"},
		{name: "http without allow_http", in: map[string]string{"google_service_account_key": emulatorKey}, wantErr: "pass allow_http=true"},
		{name: "endpoint not a url", in: map[string]string{"google_service_account_key": `{"gcs_base_url":"127.0.0.1:4443"}`}, wantErr: "gcs_base_url must be http(s)://host[:port]"},
		{name: "endpoint with user", in: map[string]string{"google_service_account_key": `{"gcs_base_url":"https://u:p@h"}`}, wantErr: "gcs_base_url must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gcsopt.Parse(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// The inline key is a secret: its value reaches no error, String or
// GoString.
func TestOptionsRedact(t *testing.T) {
	o, err := gcsopt.Parse(map[string]string{"google_service_account_key": `{"private_key":"s3cr3t-pem"}`})
	require.NoError(t, err)
	for _, s := range []string{o.String(), fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o)} {
		require.NotContains(t, s, "s3cr3t")
		require.Contains(t, s, "REDACTED")
	}
	_, err = gcsopt.Parse(map[string]string{"google_service_account_key": `{"private_key":"s3cr3t-pem"`})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t")
}

// FuzzParseOptions: it never panics, accepts only the documented names, and
// no error or rendering depends on the inline key's value beyond what the
// key's own endpoint fields say.
func FuzzParseOptions(f *testing.F) {
	f.Add("google_service_account_key", `{"gcs_base_url":"http://127.0.0.1:1","disable_oauth":true}`, "allow_http", "true")
	f.Add("google_service_account", "/sa.json", "google_application_credentials", "/adc.json")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := map[string]string{}
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
			if kv[0] != "" {
				m[kv[0]] = kv[1]
			}
		}
		o, err := gcsopt.Parse(m)
		if err != nil {
			// No message of the parser holds a brace, and a key (a JSON
			// object) always does: a key with one must not show.
			if v := m[gcsopt.ServiceAccountKey]; strings.ContainsAny(v, "{}") {
				require.NotContains(t, err.Error(), v, "an error shows the inline key")
			}
			return
		}
		for k := range m {
			require.True(t, slices.Contains(objstore.OptionNames(gcsopt.StorageOptions()), k), "accepted unknown option %q", k)
		}
		if v := o.ServiceAccountKey; strings.ContainsAny(v, "{}") {
			require.NotContains(t, o.String(), v)
			require.NotContains(t, fmt.Sprintf("%#v", o), v)
		}
	})
}
