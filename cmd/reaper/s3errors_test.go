package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// run is the whole command line as main runs it: exit code, stdout, stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// lastLine is the last line of s (the error execute prints after any logs).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestS3ConfigurationErrors: what an operator gets wrong about an s3://
// root is one line naming the root and what to set, and exit 2, on the S3
// test server.
func TestS3ConfigurationErrors(t *testing.T) {
	srv := objstoretest.S3(t)
	closed := objstoretest.ClosedAddr(t)
	opts := func(kv map[string]string) []string {
		o := srv.Options()
		for k, v := range kv {
			o[k] = v
		}
		var args []string
		for k, v := range o {
			args = append(args, "--storage-option", k+"="+v)
		}
		return args
	}
	const fixRejected = "check the storage options aws_access_key_id, aws_secret_access_key and aws_session_token (or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE)"
	root, missing := srv.URI("db"), "s3://"+srv.Bucket+"-missing/db"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong secret", append([]string{"status", "--root", root}, opts(map[string]string{"aws_secret_access_key": "wrong"})...),
			"reaper: " + root + ": the store rejected the credentials (SignatureDoesNotMatch); " + fixRejected},
		{"unknown key id", append([]string{"drop", "--root", root, "t"}, opts(map[string]string{"aws_access_key_id": "nobody"})...),
			"reaper: " + root + ": the store rejected the credentials (XAdminUserNotFound); " + fixRejected},
		{"missing bucket", append([]string{"status", "--root", missing}, opts(nil)...),
			"reaper: " + missing + ": the bucket does not exist; create it, or fix the bucket in the root URI (and aws_endpoint when the server is not AWS)"},
		{"missing bucket, purge", append([]string{"purge", "--root", missing}, opts(nil)...),
			"reaper: purge: " + missing + ": the bucket does not exist; create it, or fix the bucket in the root URI (and aws_endpoint when the server is not AWS)"},
		{"unreachable endpoint", append([]string{"purge", "--root", root, "--set", "limits.retry_max_elapsed=1s"}, opts(map[string]string{"aws_endpoint": "http://" + closed})...),
			"reaper: purge: " + root + ": cannot reach the endpoint http://" + closed + ": connection refused; check the storage option aws_endpoint (and allow_http=true for http://) or AWS_ENDPOINT_URL_S3, and that the server is up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "%s\n%s", stdout, stderr)
			require.Equal(t, tc.want, lastLine(stderr))
			// Not a warning per retry of the same thing before it, nor a
			// pass that logs and reports it too: one line.
			require.Empty(t, stdout)
			require.Equal(t, tc.want+"\n", stderr)
		})
	}

	t.Run("region and endpoint at debug", func(t *testing.T) {
		code, _, stderr := run(t, append([]string{"status", "--log-level", "debug", "--root", root}, opts(nil)...)...)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stderr, `msg="s3 client" root=`+root+` region=`+srv.Region+` region_from="storage option aws_region" endpoint=`+srv.Endpoint)
	})
}

// TestS3NoCredentials: an s3:// root with nothing in the environment (no
// keys, no profile, no instance role) says what to set, exit 2, and the
// SDK prints nothing of its own.
func TestS3NoCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", home+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", home+"/none")
	const want = "reaper: s3://reaper-no-credentials/db: no AWS credentials found (environment, shared config and profile, web identity, container or instance role); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or the storage options aws_access_key_id and aws_secret_access_key\n"
	code, _, stderr := run(t, "status", "--root", "s3://reaper-no-credentials/db")
	require.Equal(t, exitUsage, code)
	require.Equal(t, want, stderr)

	code, _, stderr = run(t, "status", "--log-level", "debug", "--root", "s3://reaper-no-credentials/db")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `region=us-east-1 region_from="default (set aws_region or AWS_REGION)" endpoint="the AWS default for the region"`)

	// Off EC2 the SDK asks the instance metadata endpoint last; one that
	// answers 403 (a proxy, a container platform) must still read as no
	// credentials, not as the store denying access.
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer imds.Close()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	srv := objstoretest.S3(t)
	root := srv.URI("db")
	code, _, stderr = run(t, "status", "--root", root, "--storage-option", "aws_endpoint="+srv.Endpoint, "--storage-option", "allow_http=true")
	require.Equal(t, exitUsage, code)
	require.Equal(t, strings.Replace(want, "s3://reaper-no-credentials/db", root, 1), stderr)
}
