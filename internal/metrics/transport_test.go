package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	s3op "github.com/lance-reaper/reaper/internal/objstore/s3"
)

// fakeS3 answers every request minimally: 404 under /bucket/missing, 204 for
// deletes, 200 with an ETag otherwise.
func fakeS3(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/bucket/missing"):
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("ETag", `"abc"`)
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRequestCounterClassifies(t *testing.T) {
	t.Parallel()
	srv := fakeS3(t)
	m := New(prometheus.NewRegistry(), Options{})
	rc := NewRequestCounter(nil, m)
	client := &http.Client{Transport: rc}

	for _, tc := range []struct {
		method, target, want string
		header               map[string]string
	}{
		{method: "GET", target: "/bucket?list-type=2&prefix=a%2F&delimiter=%2F", want: s3op.OpListObjectsV2},
		{method: "GET", target: "/bucket/a/b.lance?x-id=GetObject", want: s3op.OpGetObject},
		{method: "GET", target: "/bucket/missing/k", want: s3op.OpGetObject},
		{method: "HEAD", target: "/bucket/a/b", want: s3op.OpHeadObject},
		{method: "PUT", target: "/bucket/a/b?x-id=PutObject", want: s3op.OpPutObject},
		{method: "DELETE", target: "/bucket/a/b", want: s3op.OpDeleteObject},
		{method: "POST", target: "/bucket?delete", want: s3op.OpDeleteObjects},
		{method: "PUT", target: "/bucket", want: s3op.OpCreateBucket},
		{method: "GET", target: "/bucket?location", want: s3op.OpOther},
		{method: "HEAD", target: "/bucket", want: s3op.OpOther},
		{method: "GET", target: "/", want: s3op.OpOther},
		{method: "PUT", target: "/bucket/a/b?partNumber=1&uploadId=x", want: s3op.OpOther},
		{method: "PUT", target: "/bucket/a/c", want: s3op.OpOther, header: map[string]string{"X-Amz-Copy-Source": "/bucket/a/b"}},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.target, nil)
		require.NoError(t, err)
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		require.Equal(t, tc.want, s3op.Operation(req), "%s %s", tc.method, tc.target)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	got := rc.Counts()
	require.Equal(t, map[string]int64{
		s3op.OpListObjectsV2: 1, s3op.OpGetObject: 2, s3op.OpHeadObject: 1, s3op.OpPutObject: 1, s3op.OpDeleteObject: 1,
		s3op.OpDeleteObjects: 1, s3op.OpCreateBucket: 1, s3op.OpOther: 5,
	}, got)
	require.EqualValues(t, 13, rc.Total())
	require.Equal(t, 1.0, testutil.ToFloat64(m.s3Requests.WithLabelValues(s3op.OpGetObject, "404")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.s3Requests.WithLabelValues(s3op.OpGetObject, "200")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.s3Requests.WithLabelValues(s3op.OpDeleteObject, "204")))

	got[s3op.OpOther] = 100
	require.EqualValues(t, 5, rc.Counts()[s3op.OpOther], "Counts returns a copy")
	rc.Reset()
	require.Empty(t, rc.Counts())
}

func TestRequestCounterTransportError(t *testing.T) {
	t.Parallel()
	srv := fakeS3(t)
	url := srv.URL
	srv.Close()
	m := New(prometheus.NewRegistry(), Options{})
	rc := NewRequestCounter(nil, m)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, url+"/bucket/k", nil)
	require.NoError(t, err)
	_, err = rc.RoundTrip(req)
	require.Error(t, err)
	require.Equal(t, 1.0, testutil.ToFloat64(m.s3Requests.WithLabelValues(s3op.OpHeadObject, "error")))
	require.EqualValues(t, 1, rc.Counts()[s3op.OpHeadObject])
}

// TestRequestCounterSDK checks that requests built by the AWS SDK are named
// by the operation the SDK puts in their context.
func TestRequestCounterSDK(t *testing.T) {
	t.Parallel()
	srv := fakeS3(t)
	var names []string
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		names = append(names, awsmiddleware.GetOperationName(r.Context()))
		return http.DefaultTransport.RoundTrip(r)
	})
	rc := NewRequestCounter(inner, nil)
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("id", "secret", ""),
		HTTPClient:   &http.Client{Transport: rc},
		Retryer:      aws.NopRetryer{},
	})
	ctx := context.Background()
	_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("a/b"), Body: strings.NewReader("x")})
	require.NoError(t, err)
	_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bucket"), Key: aws.String("a/b")})
	require.NoError(t, err)
	_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bucket"), Key: aws.String("missing")})
	require.Error(t, err)
	_, err = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bucket"), Key: aws.String("a/b")})
	require.NoError(t, err)
	_, err = client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("bucket")})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{s3op.OpPutObject: 1, s3op.OpHeadObject: 2, s3op.OpDeleteObject: 1, s3op.OpOther: 1}, rc.Counts())
	require.Equal(t, []string{"PutObject", "HeadObject", "HeadObject", "DeleteObject", "HeadBucket"}, names,
		"the SDK names the operation in the request context")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// With no transport given, requests go through the HTTP backends' pool,
// not http.DefaultTransport (two idle connections per host).
func TestRequestCounterDefaultsToThePool(t *testing.T) {
	c := NewRequestCounter(nil, nil)
	tr, ok := c.next.(*http.Transport)
	require.True(t, ok, "next is %T", c.next)
	require.Equal(t, objstore.HTTPIdleConnsPerHost, tr.MaxIdleConnsPerHost)
}
