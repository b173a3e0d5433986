package s3opt_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

// FuzzParseOptions checks the storage-option parser on up to four key/value
// pairs (a pair with an empty key is left out). Seeds live in
// testdata/fuzz/FuzzParseOptions. Properties:
//   - it never panics;
//   - accepted options use only the documented names, carry the endpoint
//     as given, and that endpoint is http(s)://host without credentials,
//     plain http only with allow_http=true; keys come in pairs and a session
//     token never comes alone;
//   - secrets never leak: with the secret key and session token replaced by
//     other non-empty values, the error text, String and GoString are the
//     same, so none of them can carry a secret.
func FuzzParseOptions(f *testing.F) {
	f.Add("aws_endpoint", "http://127.0.0.1:9000", "allow_http", "true", "aws_access_key_id", "AKID", "aws_secret_access_key", "s3cr3t")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3, k4, v4 string) {
		m := map[string]string{}
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}, {k3, v3}, {k4, v4}} {
			if kv[0] != "" {
				m[kv[0]] = kv[1]
			}
		}
		o, err := s3opt.Parse(m)
		if err == nil {
			for k := range m {
				require.Contains(t, optionNames(), k)
			}
			require.Equal(t, m[s3opt.Endpoint], o.Endpoint)
			require.Equal(t, m[s3opt.Region], o.Region)
			if o.Endpoint != "" {
				u, perr := url.Parse(o.Endpoint)
				require.NoError(t, perr)
				require.Contains(t, []string{"http", "https"}, u.Scheme)
				require.NotEmpty(t, u.Host)
				require.Nil(t, u.User)
				if u.Scheme == "http" {
					require.True(t, o.AllowHTTP, "plain http accepted without allow_http")
				}
			}
			require.Equal(t, o.AccessKeyID == "", o.SecretAccessKey == "")
			if o.SessionToken != "" {
				require.NotEmpty(t, o.AccessKeyID)
			}
		}

		// The same input with other secrets must read the same everywhere.
		other := make(map[string]string, len(m))
		for k, v := range m {
			other[k] = v
			if v != "" && slices.Contains([]string{s3opt.SecretAccessKey, s3opt.SessionToken}, k) {
				other[k] = "other-" + fmt.Sprint(len(v)) + "-REPLACED"
			}
		}
		o2, err2 := s3opt.Parse(other)
		require.Equal(t, errText(err), errText(err2), "an error message depends on a secret's value")
		require.Equal(t, o.String(), o2.String(), "String shows a secret")
		require.Equal(t, fmt.Sprintf("%#v", o), fmt.Sprintf("%#v", o2), "GoString shows a secret")
		require.Equal(t, fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o2), "%%v and %%+v must redact alike")
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
