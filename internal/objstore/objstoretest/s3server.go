package objstoretest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Environment variables that steer the S3 test server.
const (
	// EnvVersityGW names the versitygw binary to start.
	EnvVersityGW = "REAPER_VERSITYGW"
	// EnvS3Endpoint points tests at an external S3 server instead of
	// starting versitygw; EnvS3AccessKey, EnvS3SecretKey and (optionally)
	// EnvS3Region go with it.
	EnvS3Endpoint  = "REAPER_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "REAPER_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "REAPER_TEST_S3_SECRET_KEY"
	EnvS3Region    = "REAPER_TEST_S3_REGION"
	// EnvRequireS3=1 (or CI=true) turns "no S3 server" from a skip into a
	// failure, so CI never passes without testing S3.
	EnvRequireS3 = "REAPER_REQUIRE_S3"
)

// S3Server is one test's view of the S3 test server: where it is, how to
// sign in, and a bucket of its own, created empty for this test.
type S3Server struct {
	Endpoint  string // e.g. http://127.0.0.1:41234
	AccessKey string
	SecretKey string
	Region    string
	Bucket    string
	// Client is signed in to the server, path-style, for setup and checks
	// that must bypass the store under test.
	Client *s3.Client
}

// Options are the Lance storage options that reach this server.
func (s S3Server) Options() map[string]string {
	o := map[string]string{
		"aws_endpoint":          s.Endpoint,
		"aws_access_key_id":     s.AccessKey,
		"aws_secret_access_key": s.SecretKey,
		"aws_region":            s.Region,
	}
	if strings.HasPrefix(s.Endpoint, "http://") {
		o["allow_http"] = "true"
	}
	return o
}

// URI is the s3:// root URI of the test's bucket under prefix ("" for the
// bucket root).
func (s S3Server) URI(prefix string) string {
	if prefix = strings.Trim(prefix, "/"); prefix == "" {
		return "s3://" + s.Bucket
	}
	return "s3://" + s.Bucket + "/" + prefix
}

// s3Proc is the S3 server the tests share: a versitygw process, or an
// external server (proc nil).
type s3Proc struct {
	*proc
	endpoint, access, secret, region string
	external                         bool
	client                           *s3.Client
}

var s3Server = &shared[*s3Proc]{what: "S3 test server", envRequire: EnvRequireS3, start: startS3, stop: func(p *s3Proc) { p.proc.stop() }}

// S3 returns the shared S3 test server with a fresh random bucket for this
// test. The first call starts versitygw on a free loopback port (or uses
// REAPER_TEST_S3_ENDPOINT); call StopS3 from TestMain, or use Main. Without a
// server the test is skipped, or failed when REAPER_REQUIRE_S3=1 or CI=true.
func S3(t testing.TB) S3Server {
	t.Helper()
	p := s3Server.get(t)
	bucket, err := p.createBucket(t)
	if err != nil {
		t.Fatalf("objstoretest: create test bucket: %v", err)
	}
	return S3Server{Endpoint: p.endpoint, AccessKey: p.access, SecretKey: p.secret, Region: p.region, Bucket: bucket, Client: p.client}
}

// StopS3 stops the versitygw process S3 started, if any, and removes its
// data. Later calls to S3 fail.
func StopS3() { s3Server.close() }

func startS3() (*s3Proc, string, error) {
	if ep := os.Getenv(EnvS3Endpoint); ep != "" {
		p, err := externalS3(ep)
		return p, "", err
	}
	bin, why := findTool(EnvVersityGW, "versitygw", "run scripts/install-versitygw.sh or set "+EnvS3Endpoint)
	if bin == "" {
		return nil, why, nil
	}
	p, err := launchRetrying(func() (*s3Proc, error) { return launchVersityGW(bin) })
	return p, "", err
}

func externalS3(endpoint string) (*s3Proc, error) {
	p := &s3Proc{
		endpoint: endpoint,
		access:   os.Getenv(EnvS3AccessKey),
		secret:   os.Getenv(EnvS3SecretKey),
		region:   os.Getenv(EnvS3Region),
		external: true,
	}
	if p.access == "" || p.secret == "" {
		return nil, fmt.Errorf("%s is set but %s or %s is not", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
	}
	if p.region == "" {
		p.region = "us-east-1"
	}
	p.client = newS3Client(p.endpoint, p.access, p.secret, p.region)
	return p, nil
}

func launchVersityGW(bin string) (*s3Proc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	p := &s3Proc{
		endpoint: "http://" + addr,
		access:   "reaper-test-" + randomHex(4),
		secret:   randomHex(16),
		region:   "us-east-1",
	}
	dir, err := tempDataDir("versitygw")
	if err != nil {
		return nil, err
	}
	p.proc, err = startProc("versitygw", bin, addr, []string{"--port", addr, "--quiet", "posix", dir},
		[]string{"ROOT_ACCESS_KEY=" + p.access, "ROOT_SECRET_KEY=" + p.secret}, dir, 15*time.Second, listening)
	if err != nil {
		return nil, err
	}
	p.client = newS3Client(p.endpoint, p.access, p.secret, p.region)
	return p, nil
}

func (p *s3Proc) createBucket(t testing.TB) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "reaper-test-" + randomHex(8)
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if p.region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(p.region)}
	}
	if _, err := p.client.CreateBucket(ctx, in); err != nil {
		return "", err
	}
	if p.external {
		// A shared server keeps what tests leave behind; versitygw's data
		// dir goes away with the process.
		t.Cleanup(func() { p.removeBucket(t, name) })
	}
	return name, nil
}

// removeBucket empties and deletes a test bucket, best effort.
func (p *s3Proc) removeBucket(t testing.TB, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pages := s3.NewListObjectsV2Paginator(p.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			t.Logf("objstoretest: list test bucket %s: %v", bucket, err)
			return
		}
		if len(out.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(out.Contents))
		for i, o := range out.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		if _, err := p.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			t.Logf("objstoretest: empty test bucket %s: %v", bucket, err)
			return
		}
	}
	if _, err := p.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Logf("objstoretest: delete test bucket %s: %v", bucket, err)
	}
}

func newS3Client(endpoint, access, secret, region string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		UsePathStyle: true,
	})
}
