package objstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// s3Proc is the server shared by every test in the process.
type s3Proc struct {
	endpoint, access, secret, region string
	external                         bool
	client                           *s3.Client
	cmd                              *exec.Cmd
	exited                           chan struct{} // closed when cmd has exited
	dataDir                          string
	skip                             string // why no server could be had
	err                              error  // why the server failed to start
}

var (
	s3Once  sync.Once
	s3State *s3Proc
	s3Mu    sync.Mutex // guards s3State against StopS3
)

// S3 returns the shared S3 test server with a fresh random bucket for this
// test. The first call starts versitygw on a free loopback port (or uses
// REAPER_TEST_S3_ENDPOINT); call StopS3 from TestMain, or use Main. Without a
// server the test is skipped, or failed when REAPER_REQUIRE_S3=1 or CI=true.
func S3(t testing.TB) S3Server {
	t.Helper()
	s3Once.Do(func() {
		p := startS3()
		s3Mu.Lock()
		s3State = p
		s3Mu.Unlock()
	})
	s3Mu.Lock()
	p := s3State
	s3Mu.Unlock()
	switch {
	case p == nil:
		t.Fatal("objstoretest: S3 test server already stopped")
	case p.err != nil:
		t.Fatalf("objstoretest: start S3 test server: %v", p.err)
	case p.skip != "" && requireS3():
		t.Fatalf("objstoretest: no S3 test server (%s=1 or CI=true forbids skipping): %s", EnvRequireS3, p.skip)
	case p.skip != "":
		t.Skipf("objstoretest: no S3 test server: %s", p.skip)
	}
	bucket, err := p.createBucket(t)
	if err != nil {
		t.Fatalf("objstoretest: create test bucket: %v", err)
	}
	return S3Server{Endpoint: p.endpoint, AccessKey: p.access, SecretKey: p.secret, Region: p.region, Bucket: bucket, Client: p.client}
}

// StopS3 stops the versitygw process S3 started, if any, and removes its
// data. Later calls to S3 fail.
func StopS3() {
	s3Once.Do(func() {}) // a later S3 call must not start a new server
	s3Mu.Lock()
	p := s3State
	s3State = nil
	s3Mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Main runs the tests, then stops the S3, GCS and Azure test servers: call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopS3()
	StopGCS()
	StopAzure()
	os.Exit(code)
}

func requireS3() bool {
	return os.Getenv(EnvRequireS3) == "1" || os.Getenv("CI") == "true"
}

func startS3() *s3Proc {
	if ep := os.Getenv(EnvS3Endpoint); ep != "" {
		return externalS3(ep)
	}
	bin, why := findVersityGW()
	if bin == "" {
		return &s3Proc{skip: why}
	}
	var err error
	for range 3 { // the free port can be taken between probe and bind
		var p *s3Proc
		if p, err = launchVersityGW(bin); err == nil {
			return p
		}
	}
	return &s3Proc{err: err}
}

func externalS3(endpoint string) *s3Proc {
	p := &s3Proc{
		endpoint: endpoint,
		access:   os.Getenv(EnvS3AccessKey),
		secret:   os.Getenv(EnvS3SecretKey),
		region:   os.Getenv(EnvS3Region),
		external: true,
	}
	if p.access == "" || p.secret == "" {
		p.err = fmt.Errorf("%s is set but %s or %s is not", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		return p
	}
	if p.region == "" {
		p.region = "us-east-1"
	}
	p.client = newS3Client(p.endpoint, p.access, p.secret, p.region)
	return p
}

// findVersityGW looks in REAPER_VERSITYGW, <repo>/.tools/bin, then PATH.
func findVersityGW() (bin, why string) {
	if b := os.Getenv(EnvVersityGW); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Sprintf("%s=%s: %v", EnvVersityGW, b, err)
		}
		return b, ""
	}
	if root, err := repoRoot(); err == nil {
		b := filepath.Join(root, ".tools", "bin", "versitygw")
		if _, err := os.Stat(b); err == nil {
			return b, ""
		}
	}
	if b, err := exec.LookPath("versitygw"); err == nil {
		return b, ""
	}
	return "", fmt.Sprintf("versitygw not found in $%s, <repo>/.tools/bin or PATH; run scripts/install-versitygw.sh or set %s", EnvVersityGW, EnvS3Endpoint)
}

// repoRoot walks up from the working directory to the folder with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

func launchVersityGW(bin string) (*s3Proc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reaper-versitygw-")
	if err != nil {
		return nil, fmt.Errorf("make data dir: %w", err)
	}
	p := &s3Proc{
		endpoint: "http://" + addr,
		access:   "reaper-test-" + randomHex(4),
		secret:   randomHex(16),
		region:   "us-east-1",
		dataDir:  dir,
		exited:   make(chan struct{}),
	}
	var stderr strings.Builder
	p.cmd = exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
	p.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+p.access, "ROOT_SECRET_KEY="+p.secret)
	p.cmd.Stdout = &stderr
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(addr, 15*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("versitygw on %s: %w; output: %s", addr, err, strings.TrimSpace(stderr.String()))
	}
	p.client = newS3Client(p.endpoint, p.access, p.secret, p.region)
	return p, nil
}

// waitReady polls the port until it accepts connections, the process dies,
// or the timeout passes.
func (p *s3Proc) waitReady(addr string, timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("exited before listening")
		case <-deadline:
			return fmt.Errorf("not listening after %v", timeout)
		case <-tick.C:
		}
	}
}

// stop kills versitygw (its data is throwaway, so no graceful shutdown) and
// removes the data directory.
func (p *s3Proc) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if p.dataDir != "" {
		_ = os.RemoveAll(p.dataDir)
	}
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

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
