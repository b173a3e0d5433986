package s3opt_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

const secret = "s3cr3t-value"

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    s3opt.Options
		wantErr []string // substrings of the error
	}{
		{name: "empty", in: nil, want: s3opt.Options{}},
		{
			name: "all",
			in: map[string]string{
				"aws_endpoint": "http://127.0.0.1:9000", "aws_region": "eu-west-1",
				"aws_access_key_id": "AKID", "aws_secret_access_key": secret, "aws_session_token": "tok",
				"allow_http": "true", "aws_virtual_hosted_style_request": "false",
			},
			want: s3opt.Options{
				Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKeyID: "AKID",
				SecretAccessKey: secret, SessionToken: "tok", AllowHTTP: true,
			},
		},
		{name: "https endpoint", in: map[string]string{"aws_endpoint": "https://s3.example.com"}, want: s3opt.Options{Endpoint: "https://s3.example.com"}},
		{name: "virtual hosted", in: map[string]string{"aws_virtual_hosted_style_request": "TRUE"}, want: s3opt.Options{VirtualHostedStyle: true}},
		{
			name:    "unknown key",
			in:      map[string]string{"aws_endpiont": "x"},
			wantErr: []string{`unknown storage option "aws_endpiont"`, "accepted: ", "aws_endpoint", "allow_http", "aws_virtual_hosted_style_request"},
		},
		{name: "http without allow_http", in: map[string]string{"aws_endpoint": "http://h:1"}, wantErr: []string{"allow_http=true"}},
		{name: "http with allow_http false", in: map[string]string{"aws_endpoint": "http://h:1", "allow_http": "false"}, wantErr: []string{"allow_http=true"}},
		{name: "bad bool", in: map[string]string{"allow_http": "yes"}, wantErr: []string{`allow_http="yes"`, "true or false"}},
		{name: "endpoint without scheme", in: map[string]string{"aws_endpoint": "h:9000"}, wantErr: []string{"aws_endpoint", "http(s)://"}},
		{name: "endpoint with userinfo", in: map[string]string{"aws_endpoint": "https://u:" + secret + "@h"}, wantErr: []string{"credentials in the URL"}},
		{name: "access key only", in: map[string]string{"aws_access_key_id": "AKID"}, wantErr: []string{"aws_access_key_id and aws_secret_access_key must be given together"}},
		{name: "secret only", in: map[string]string{"aws_secret_access_key": secret}, wantErr: []string{"must be given together"}},
		{name: "token only", in: map[string]string{"aws_session_token": secret}, wantErr: []string{"aws_session_token needs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s3opt.Parse(tc.in)
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
	o := s3opt.Options{AccessKeyID: "AKID", SecretAccessKey: secret, SessionToken: secret}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), o.String()} {
		require.NotContains(t, s, secret)
		require.Contains(t, s, "AKID")
	}
}

// optionNames are the names Parse accepts, as s3.Backend publishes them.
func optionNames() []string {
	return objstore.OptionNames(s3opt.StorageOptions())
}
