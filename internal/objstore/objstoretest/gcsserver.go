package objstoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// gcsProc is the server shared by every test in the process.
type gcsProc struct {
	endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	skip     string
	err      error
}

var (
	gcsOnce  sync.Once
	gcsState *gcsProc
	gcsMu    sync.Mutex // guards gcsState against StopGCS
)

// GCS returns the shared GCS test server with a fresh random bucket for
// this test. The first call starts fake-gcs-server on a free loopback port
// (or uses REAPER_TEST_GCS_ENDPOINT); Main stops it. Without a server the
// test is skipped, or failed when REAPER_REQUIRE_GCS=1 or CI=true.
func GCS(t testing.TB) GCSServer {
	t.Helper()
	gcsOnce.Do(func() {
		p := startGCS()
		gcsMu.Lock()
		gcsState = p
		gcsMu.Unlock()
	})
	gcsMu.Lock()
	p := gcsState
	gcsMu.Unlock()
	switch {
	case p == nil:
		t.Fatal("objstoretest: GCS test server already stopped")
	case p.err != nil:
		t.Fatalf("objstoretest: start GCS test server: %v", p.err)
	case p.skip != "" && requireGCS():
		t.Fatalf("objstoretest: no GCS test server (%s=1 or CI=true forbids skipping): %s", EnvRequireGCS, p.skip)
	case p.skip != "":
		t.Skipf("objstoretest: no GCS test server: %s", p.skip)
	}
	bucket := "reaper-test-" + randomHex(8)
	if err := createGCSBucket(p.endpoint, bucket); err != nil {
		t.Fatalf("objstoretest: create GCS test bucket: %v", err)
	}
	return GCSServer{Endpoint: p.endpoint, Bucket: bucket}
}

// StopGCS stops the fake-gcs-server process GCS started, if any. Later
// calls to GCS fail.
func StopGCS() {
	gcsOnce.Do(func() {})
	gcsMu.Lock()
	p := gcsState
	gcsState = nil
	gcsMu.Unlock()
	if p != nil && p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func requireGCS() bool {
	return os.Getenv(EnvRequireGCS) == "1" || os.Getenv("CI") == "true"
}

func startGCS() *gcsProc {
	if ep := os.Getenv(EnvGCSEndpoint); ep != "" {
		return &gcsProc{endpoint: strings.TrimSuffix(ep, "/")}
	}
	bin, why := findFakeGCS()
	if bin == "" {
		return &gcsProc{skip: why}
	}
	var err error
	for range 3 { // the free port can be taken between probe and bind
		var p *gcsProc
		if p, err = launchFakeGCS(bin); err == nil {
			return p
		}
	}
	return &gcsProc{err: err}
}

// findFakeGCS looks in REAPER_FAKE_GCS, <repo>/.tools/bin, then PATH.
func findFakeGCS() (bin, why string) {
	if b := os.Getenv(EnvFakeGCS); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Sprintf("%s=%s: %v", EnvFakeGCS, b, err)
		}
		return b, ""
	}
	if root, err := repoRoot(); err == nil {
		b := filepath.Join(root, ".tools", "bin", "fake-gcs-server")
		if _, err := os.Stat(b); err == nil {
			return b, ""
		}
	}
	if b, err := exec.LookPath("fake-gcs-server"); err == nil {
		return b, ""
	}
	return "", fmt.Sprintf("fake-gcs-server not found in $%s, <repo>/.tools/bin or PATH; run scripts/install-fake-gcs-server.sh or set %s", EnvFakeGCS, EnvGCSEndpoint)
}

func launchFakeGCS(bin string) (*gcsProc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	p := &gcsProc{endpoint: "http://" + addr, exited: make(chan struct{})}
	var out strings.Builder
	p.cmd = exec.Command(bin, "-scheme", "http", "-host", host, "-port", port,
		"-public-host", addr, "-external-url", p.endpoint, "-backend", "memory", "-log-level", "error")
	p.cmd.Stdout = &out
	p.cmd.Stderr = &out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(15 * time.Second); err != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("fake-gcs-server on %s: %w; output: %s", addr, err, strings.TrimSpace(out.String()))
	}
	return p, nil
}

// waitReady polls the bucket listing until it answers, the process dies,
// or the timeout passes.
func (p *gcsProc) waitReady(timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(p.endpoint + "/storage/v1/b?project=reaper-test")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return errors.New("exited before listening")
		case <-deadline:
			return fmt.Errorf("not answering after %v", timeout)
		case <-tick.C:
		}
	}
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
