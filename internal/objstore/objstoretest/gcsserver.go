package objstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// Environment variables that steer the GCS test server.
const (
	// EnvFakeGCS names the fake-gcs-server binary to start.
	EnvFakeGCS = "REAPER_FAKE_GCS"
	// EnvGCSEndpoint points tests at an already running GCS JSON API
	// emulator (http://host:port) instead of starting fake-gcs-server.
	EnvGCSEndpoint = "REAPER_TEST_GCS_ENDPOINT"
	// EnvRequireGCS=1 (or CI=true) turns "no GCS test server" from a skip
	// into a failure, so CI never passes without testing GCS.
	EnvRequireGCS = "REAPER_REQUIRE_GCS"
)

// GCSServer is one test's view of the GCS test server: where it is and a
// bucket of its own, created empty for this test.
type GCSServer struct {
	Endpoint string // e.g. http://127.0.0.1:41234
	Bucket   string
}

// Options are the Lance storage options that reach this server: the way
// object_store (and so LanceDB) is pointed at fake-gcs-server, a service
// account key carrying the endpoint with OAuth disabled.
func (s GCSServer) Options() map[string]string {
	key, _ := json.Marshal(map[string]any{
		"gcs_base_url":   s.Endpoint,
		"disable_oauth":  true,
		"client_email":   "",
		"private_key":    "",
		"private_key_id": "",
	})
	return map[string]string{"google_service_account_key": string(key), "allow_http": "true"}
}

// URI is the gs:// root URI of the test's bucket under prefix ("" for the
// bucket root).
func (s GCSServer) URI(prefix string) string {
	if prefix = strings.Trim(prefix, "/"); prefix == "" {
		return "gs://" + s.Bucket
	}
	return "gs://" + s.Bucket + "/" + prefix
}

// PutRaw writes an object straight to the server's upload endpoint,
// bypassing the store under test (setup of neighbours outside a root).
func (s GCSServer) PutRaw(t testing.TB, name string, body []byte) {
	t.Helper()
	u := fmt.Sprintf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s", s.Endpoint, s.Bucket, url.QueryEscape(name))
	resp, err := http.Post(u, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("objstoretest: put %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("objstoretest: put %s: %s: %s", name, resp.Status, msg)
	}
}

// HasRaw reports whether the server holds an object, bypassing the store.
func (s GCSServer) HasRaw(t testing.TB, name string) bool {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/storage/v1/b/%s/o/%s", s.Endpoint, s.Bucket, url.PathEscape(name)))
	if err != nil {
		t.Fatalf("objstoretest: stat %s: %v", name, err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// gcsProc is the GCS server the tests share: a fake-gcs-server process,
// or an external emulator (proc nil).
type gcsProc struct {
	*proc
	endpoint string
}

var gcsServer = &shared[*gcsProc]{what: "GCS test server", envRequire: EnvRequireGCS, start: startGCS, stop: func(p *gcsProc) { p.proc.stop() }}

// GCS returns the shared GCS test server with a fresh random bucket for
// this test. The first call starts fake-gcs-server on a free loopback port
// (or uses REAPER_TEST_GCS_ENDPOINT); Main stops it. Without a server the
// test is skipped, or failed when REAPER_REQUIRE_GCS=1 or CI=true.
func GCS(t testing.TB) GCSServer {
	t.Helper()
	p := gcsServer.get(t)
	bucket := "reaper-test-" + randomHex(8)
	if err := createGCSBucket(p.endpoint, bucket); err != nil {
		t.Fatalf("objstoretest: create GCS test bucket: %v", err)
	}
	return GCSServer{Endpoint: p.endpoint, Bucket: bucket}
}

// StopGCS stops the fake-gcs-server process GCS started, if any. Later
// calls to GCS fail.
func StopGCS() { gcsServer.close() }

func startGCS() (*gcsProc, string, error) {
	if ep := os.Getenv(EnvGCSEndpoint); ep != "" {
		return &gcsProc{endpoint: strings.TrimSuffix(ep, "/")}, "", nil
	}
	bin, why := findTool(EnvFakeGCS, "fake-gcs-server", "run scripts/install-fake-gcs-server.sh or set "+EnvGCSEndpoint)
	if bin == "" {
		return nil, why, nil
	}
	p, err := launchRetrying(func() (*gcsProc, error) { return launchFakeGCS(bin) })
	return p, "", err
}

func launchFakeGCS(bin string) (*gcsProc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	p := &gcsProc{endpoint: "http://" + addr}
	p.proc, err = startProc("fake-gcs-server", bin, addr, []string{"-scheme", "http", "-host", host, "-port", port,
		"-public-host", addr, "-external-url", p.endpoint, "-backend", "memory", "-log-level", "error"},
		nil, "", 15*time.Second, func(*proc) bool { return answersBucketListing(p.endpoint) })
	if err != nil {
		return nil, err
	}
	return p, nil
}

// answersBucketListing is fake-gcs-server's readiness probe: its port opens
// before its API answers.
func answersBucketListing(endpoint string) bool {
	resp, err := http.Get(endpoint + "/storage/v1/b?project=reaper-test")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func createGCSBucket(endpoint, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"name": name})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/storage/v1/b?project=reaper-test", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("create bucket %s: %s: %s", name, resp.Status, msg)
	}
	return nil
}
