package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns the Google Cloud Storage scenarios: reaper's purge of one
// table on fake-gcs-server (emulator figures, not cloud figures). No peer
// runs: gsutil and rclone's GCS remote are not installed here. Requests are
// counted by a reverse proxy in front of the emulator, which logs nothing.

// fakeGCS is a fake-gcs-server process behind a counting proxy.
type fakeGCS struct {
	Endpoint string // the proxy: what reaper talks to
	backend  string // the emulator itself
	cmd      *exec.Cmd
	proxy    *http.Server

	mu     sync.Mutex
	counts map[string]map[string]int64 // bucket -> operation -> requests
}

func startFakeGCS(ctx context.Context, bin, workDir string) (*fakeGCS, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	f := &fakeGCS{backend: "http://" + addr, counts: map[string]map[string]int64{}}
	logf, err := os.Create(filepath.Join(workDir, "fake-gcs.out"))
	if err != nil {
		return nil, err
	}
	f.cmd = exec.Command(bin, "-scheme", "http", "-host", host, "-port", port, "-public-host", addr,
		"-external-url", f.backend, "-backend", "memory", "-log-level", "error")
	f.cmd.Stdout, f.cmd.Stderr = logf, logf
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fake-gcs-server: %w", err)
	}
	target, _ := url.Parse(f.backend)
	rp := httputil.NewSingleHostReverseProxy(target)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.stop()
		return nil, err
	}
	f.Endpoint = "http://" + l.Addr().String()
	f.proxy = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = f.proxy.Serve(l) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(f.backend + "/storage/v1/b?project=bench")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return f, nil
			}
		}
		if time.Now().After(deadline) {
			f.stop()
			return nil, fmt.Errorf("fake-gcs-server did not answer on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (f *fakeGCS) stop() {
	if f.proxy != nil {
		_ = f.proxy.Close()
	}
	if f.cmd != nil && f.cmd.Process != nil {
		_ = f.cmd.Process.Kill()
		_ = f.cmd.Wait()
	}
}

// gcsOperation names a JSON API request: list, get (media), metadata,
// upload, delete, or other.
func gcsOperation(r *http.Request) (bucket, op string) {
	p := r.URL.Path
	upload := strings.HasPrefix(p, "/upload/storage/v1/b/")
	rest, ok := strings.CutPrefix(strings.TrimPrefix(p, "/upload"), "/storage/v1/b/")
	if !ok {
		return "", "other"
	}
	bucket, obj, _ := strings.Cut(rest, "/")
	switch {
	case upload && r.Method == http.MethodPost:
		return bucket, "upload"
	case obj == "o" && r.Method == http.MethodGet:
		return bucket, "list"
	case strings.HasPrefix(obj, "o/") && r.Method == http.MethodDelete:
		return bucket, "delete"
	case strings.HasPrefix(obj, "o/") && r.Method == http.MethodGet && r.URL.Query().Get("alt") == "media":
		return bucket, "get"
	case strings.HasPrefix(obj, "o/") && r.Method == http.MethodGet:
		return bucket, "metadata"
	}
	return bucket, "other"
}

func (f *fakeGCS) record(r *http.Request) {
	bucket, op := gcsOperation(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts[bucket] == nil {
		f.counts[bucket] = map[string]int64{}
	}
	f.counts[bucket][op]++
}

// take returns and clears the counts of bucket.
func (f *fakeGCS) take(bucket string) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.counts[bucket]
	delete(f.counts, bucket)
	return m
}

// storageOptions are reaper's --storage-option pairs for the proxy: the
// key JSON object_store and Lance take for an emulator.
func (f *fakeGCS) storageOptions() []string {
	key, _ := json.Marshal(map[string]any{"gcs_base_url": f.Endpoint, "disable_oauth": true})
	return []string{"google_service_account_key=" + string(key), "allow_http=true"}
}

func (f *fakeGCS) createBucket(ctx context.Context, name string) error {
	body, _ := json.Marshal(map[string]string{"name": name})
	return f.do(ctx, http.MethodPost, f.backend+"/storage/v1/b?project=bench", "application/json", body, http.StatusOK)
}

func (f *fakeGCS) put(ctx context.Context, bucket, key string, body []byte) error {
	u := fmt.Sprintf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s", f.backend, bucket, url.QueryEscape(key))
	return f.do(ctx, http.MethodPost, u, "application/octet-stream", body, http.StatusOK)
}

func (f *fakeGCS) do(ctx context.Context, method, u, ctype string, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, msg)
	}
	return nil
}

// count lists prefix in bucket (the emulator directly, uncounted) and
// returns how many objects it holds.
func (f *fakeGCS) count(ctx context.Context, bucket, prefix string) (int, error) {
	n, token := 0, ""
	for {
		u := fmt.Sprintf("%s/storage/v1/b/%s/o?prefix=%s&maxResults=1000&pageToken=%s", f.backend, bucket, url.QueryEscape(prefix), url.QueryEscape(token))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		var page struct {
			Items         []json.RawMessage `json:"items"`
			NextPageToken string            `json:"nextPageToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("list %s/%s: %w", bucket, prefix, err)
		}
		n += len(page.Items)
		if token = page.NextPageToken; token == "" {
			return n, nil
		}
	}
}

// storeDate is the emulator's clock, from the Date of one answer.
func (f *fakeGCS) storeDate(ctx context.Context) (time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.backend+"/storage/v1/b?project=bench", nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	resp.Body.Close()
	return http.ParseTime(resp.Header.Get("Date"))
}

// gcsPurge uploads one table of n objects per repetition to a fresh bucket
// and times reaper's purge of it through the counting proxy.
func gcsPurge(ctx context.Context, c config, t tools, f *fakeGCS, n int, rep *report) error {
	scen := fmt.Sprintf("gcs/%d", n)
	s := &series{Scenario: scen, Contender: "reaper", Objects: n}
	rep.Series = append(rep.Series, s)
	body := make([]byte, c.ObjSize)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	for r := range c.Reps {
		bucket := fmt.Sprintf("bench-gcs-%d-%d", n, r)
		if err := f.createBucket(ctx, bucket); err != nil {
			return err
		}
		// The drop is dated before the uploads (the identity fence admits
		// objects up to the drop plus the skew allowance, 5 minutes), with a
		// TTL of 1 ms: the emulator stamps objects with the time they
		// arrive, which cannot be set to the past as files can.
		dropped := time.Now().Add(-time.Minute)
		up := time.Now()
		if err := f.putTable(ctx, bucket, n, body); err != nil {
			return err
		}
		if err := f.put(ctx, bucket, "db/"+lifecycle.MarkerKey("t0"), lifecycle.EncodeMarker(dropped, time.Millisecond)); err != nil {
			return err
		}
		if r == 0 {
			logf("%s: uploaded %d objects in %s", scen, n, time.Since(up).Round(time.Millisecond))
			if got, err := f.count(ctx, bucket, "db/"+lifecycle.TableDir("t0")); err != nil || got != n {
				return fmt.Errorf("%s: the emulator lists %d objects, want %d (%v)", bucket, got, n, err)
			}
		}
		// Due by the store's clock: its Date (whole seconds) must pass the
		// marker's upload time plus the TTL.
		marked := time.Now()
		for {
			d, err := f.storeDate(ctx)
			if err != nil {
				return err
			}
			if d.After(marked.Add(time.Second)) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		f.take(bucket)
		argv := []string{t.Reaper, "purge", "--root", "gs://" + bucket + "/db"}
		for _, kv := range f.storageOptions() {
			argv = append(argv, "--storage-option", kv)
		}
		argv = append(argv, "--allow-short-ttl", "-o", "json", "--log-level", "warn")
		if c.DeleteConc > 0 {
			argv = append(argv, "--set", fmt.Sprintf("limits.delete_concurrency=%d", c.DeleteConc))
		}
		res, err := measure(ctx, nil, argv...)
		if err != nil {
			return err
		}
		x := sample{Wall: res.Wall, MaxRSS: res.MaxRSS, Server: f.take(bucket)}
		if err := checkPurged(res.Stdout, n); err != nil {
			return fmt.Errorf("%s: %w", bucket, err)
		}
		if left, err := f.count(ctx, bucket, "db/"); err != nil || left != 0 {
			return fmt.Errorf("%s: %d objects left after the purge (%v)", bucket, left, err)
		}
		s.add(x)
		s.Command = strings.Join(argv, " ")
		logf("%s reaper  rep %d: %s, %d requests, %.1f MiB", scen, r+1, res.Wall.Round(time.Millisecond), sum(x.Server), float64(res.MaxRSS)/(1<<20))
	}
	return nil
}

// putTable uploads the table's objects, 16 in flight.
func (f *fakeGCS) putTable(ctx context.Context, bucket string, n int, body []byte) error {
	keys := tableKeys("db/"+lifecycle.TableDir("t0"), faketable.Spread(n))
	ch := make(chan string)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range ch {
				if err := f.put(ctx, bucket, k, body); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
loop:
	for _, k := range keys {
		select {
		case ch <- k:
		case err = <-errs:
			break loop
		}
	}
	close(ch)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
