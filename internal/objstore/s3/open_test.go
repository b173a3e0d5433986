package s3_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

const secret = "s3cr3t-value"

// isolateAWSEnv hides the machine's AWS config so the default chain is empty.
func isolateAWSEnv(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_CA_BUNDLE": "",
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "",
	} {
		t.Setenv(k, v)
	}
}

func TestNewClientDefaults(t *testing.T) {
	isolateAWSEnv(t)
	c, err := s3.NewClient(t.Context(), s3opt.Options{}, nil)
	require.NoError(t, err)
	require.Equal(t, s3.DefaultRegion, c.Options().Region, "region without options or chain")
	require.True(t, c.Options().UsePathStyle, "path-style by default")

	t.Setenv("AWS_REGION", "ap-south-1")
	c, err = s3.NewClient(t.Context(), s3opt.Options{}, nil)
	require.NoError(t, err)
	require.Equal(t, "ap-south-1", c.Options().Region, "region from the default chain")

	c, err = s3.NewClient(t.Context(), s3opt.Options{Region: "eu-west-1", VirtualHostedStyle: true}, nil)
	require.NoError(t, err)
	require.Equal(t, "eu-west-1", c.Options().Region, "region option beats the chain")
	require.False(t, c.Options().UsePathStyle)
}

func TestOpenErrors(t *testing.T) {
	isolateAWSEnv(t)
	s3loc, err := all.ParseLocation("s3://bkt/p")
	require.NoError(t, err)
	fileLoc, err := all.ParseLocation("/tmp/x")
	require.NoError(t, err)

	_, err = s3.Open(t.Context(), fileLoc, nil, objstore.OpenEnv{})
	require.ErrorContains(t, err, "not an s3:// root")

	_, err = s3.Open(t.Context(), s3loc, map[string]string{"aws_secret_access_key": secret}, objstore.OpenEnv{})
	require.ErrorContains(t, err, "open s3://bkt/p: ")
	require.NotContains(t, err.Error(), secret)

	st, err := s3.Open(t.Context(), s3loc, map[string]string{"aws_access_key_id": "AKID", "aws_secret_access_key": secret}, objstore.OpenEnv{})
	require.NoError(t, err)
	require.Equal(t, "s3://bkt/p", st.URI())
}

// TestEnvEndpointPlainHTTP: an http:// endpoint from the SDK's environment
// needs allow_http=true, as aws_endpoint does; https needs nothing.
func TestEnvEndpointPlainHTTP(t *testing.T) {
	isolateAWSEnv(t)
	loc, err := all.ParseLocation("s3://bkt/p")
	require.NoError(t, err)
	keys := map[string]string{"aws_access_key_id": "AKID", "aws_secret_access_key": secret}
	for _, env := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "http://127.0.0.1:7070")
			_, err := s3.Open(t.Context(), loc, keys, objstore.OpenEnv{})
			require.EqualError(t, err, "open s3://bkt/p: the endpoint http://127.0.0.1:7070 (from "+env+") is plain http: pass the storage option allow_http=true to allow it")

			_, err = s3.Open(t.Context(), loc, map[string]string{"aws_access_key_id": "AKID", "aws_secret_access_key": secret, "allow_http": "true"}, objstore.OpenEnv{})
			require.NoError(t, err)

			t.Setenv(env, "https://minio.example.internal:9000")
			_, err = s3.Open(t.Context(), loc, keys, objstore.OpenEnv{})
			require.NoError(t, err)
		})
	}
}
