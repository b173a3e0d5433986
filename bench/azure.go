package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns the Azure Blob Storage scenario: reaper's purge of one
// table on Azurite (in memory, on 127.0.0.1), requests counted by an
// in-process proxy between reaper and Azurite. Emulator figures are not
// cloud figures: Azurite spends time linear in its blob count per request.

// Azurite's published development account: valid only against an emulator.
const (
	azAccount = "devstoreaccount1"
	azKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// azBatch is the Blob Batch limit reaper uses per request.
	azBatch = 256
	azPage  = 1000
)

// azurite is an Azurite process and a counting proxy in front of it.
type azurite struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	proxy   *httptest.Server
	client  *azblob.Client
	mu      sync.Mutex
	counts  map[string]int64
	counted bool
}

func startAzurite(ctx context.Context, bin, workDir string) (*azurite, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	host, port, _ := strings.Cut(addr, ":")
	a := &azurite{exited: make(chan struct{}), counts: map[string]int64{}}
	// --blobKeepAliveTimeout: as in objstoretest, idle connections outlive
	// Go's 90 s, so a PUT never meets a connection Azurite is closing.
	a.cmd = exec.CommandContext(ctx, bin, "--blobHost", host, "--blobPort", port, "--blobKeepAliveTimeout", "600",
		"--skipApiVersionCheck", "--loose",
		"--silent", "--disableProductStyleUrl", "--disableTelemetry", "--inMemoryPersistence")
	a.cmd.Dir = workDir
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start azurite: %w", err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case <-a.exited:
			return nil, errors.New("azurite exited before listening")
		default:
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("azurite did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	a.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		if a.counted {
			a.counts[azureOperation(r)]++
		}
		a.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	cred, err := azblob.NewSharedKeyCredential(azAccount, azKey)
	if err != nil {
		a.stop()
		return nil, err
	}
	opts := &azblob.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: -1}
	if a.client, err = azblob.NewClientWithSharedKeyCredential("http://"+addr+"/"+azAccount, cred, opts); err != nil {
		a.stop()
		return nil, err
	}
	return a, nil
}

func (a *azurite) stop() {
	if a.proxy != nil {
		a.proxy.Close()
	}
	if a.cmd.Process != nil {
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// count turns request counting on (and resets it) or off, returning the
// counts so far.
func (a *azurite) count(on bool) map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.counts
	a.counts, a.counted = map[string]int64{}, on
	return out
}

// azureOperation names a Blob service request after its REST operation.
func azureOperation(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case q.Get("comp") == "list":
		return "ListBlobs"
	case q.Get("comp") == "batch":
		return "BlobBatch"
	case r.Method == http.MethodPut:
		return "PutBlob"
	case r.Method == http.MethodDelete:
		return "DeleteBlob"
	case r.Method == http.MethodHead:
		return "GetBlobProperties"
	case r.Method == http.MethodGet:
		return "GetBlob"
	}
	return "other"
}

// azurePurge measures reaper purging one table of n blobs on Azurite, c.Reps
// times (at most 3: every run writes the table through the API first).
func azurePurge(ctx context.Context, c config, t tools, az *azurite, n int, rep *report) error {
	scen := fmt.Sprintf("azure/%d", n)
	s := &series{Scenario: scen, Contender: "reaper", Objects: n}
	rep.Series = append(rep.Series, s)
	for r := range min(c.Reps, 3) {
		name := fmt.Sprintf("bench-%d-%d", n, r)
		if _, err := az.client.CreateContainer(ctx, name, nil); err != nil {
			return fmt.Errorf("create container %s: %w", name, err)
		}
		cc := az.client.ServiceClient().NewContainerClient(name)
		logf("%s: writing the table into container %s", scen, name)
		if err := azWriteTable(ctx, cc, n, c.ObjSize); err != nil {
			return err
		}
		// Due-ness is judged by the store's clock from the marker's own
		// LastModified, so the marker is written with a 1ms TTL (the run
		// passes --allow-short-ttl) and the run starts once Azurite's
		// second-resolution clock has passed it.
		marker := lifecycle.EncodeMarker(time.Now(), time.Millisecond)
		if _, err := cc.NewBlockBlobClient("db/"+lifecycle.MarkerKey("t0")).Upload(ctx, streaming.NopCloser(bytes.NewReader(marker)), nil); err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		prom := filepath.Join(c.WorkDir, name+".prom")
		argv := []string{t.Reaper, "purge", "--root", "az://" + name + "/db",
			"--storage-option", "azure_storage_account_name=" + azAccount,
			"--storage-option", "azure_storage_account_key=" + azKey,
			"--storage-option", "azure_storage_endpoint=" + az.proxy.URL + "/" + azAccount,
			"--storage-option", "allow_http=true",
			"--allow-short-ttl", "-o", "json", "--log-level", "warn", "--textfile", prom}
		az.count(true)
		res, err := measure(ctx, nil, argv...)
		counts := az.count(false)
		if err != nil {
			return err
		}
		if err := checkPurged(res.Stdout, n); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		left := 0
		prefix := "db/" + lifecycle.TableDir("t0")
		for p := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix}); p.More(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			left += len(page.Segment.BlobItems)
		}
		if left != 0 {
			return fmt.Errorf("%s: reaper left %d blobs", name, left)
		}
		s.add(sample{Wall: res.Wall, MaxRSS: res.MaxRSS, Server: counts})
		s.Command = strings.ReplaceAll(strings.Join(argv, " "), azKey, "$KEY")
		logf("%s reaper rep %d: %s, %d requests", scen, r+1, res.Wall.Round(time.Millisecond), sum(counts))
		if _, err := az.client.DeleteContainer(ctx, name, nil); err != nil {
			return err
		}
	}
	return nil
}

// azWriteTable uploads a Lance-shaped table of n blobs (one manifest, the
// rest data files) with 32 concurrent uploads.
func azWriteTable(ctx context.Context, cc *container.Client, n, size int) error {
	body := bytes.Repeat([]byte("x"), size)
	keys := make(chan string)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for k := range keys {
				if _, err := cc.NewBlockBlobClient(k).Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), nil); err != nil {
					errs <- fmt.Errorf("upload %s: %w", k, err)
					return
				}
			}
		})
	}
	shape := faketable.Shape{Manifests: min(n, 1)}
	shape.Data = n - shape.Len()
	var err error
	for _, k := range tableKeys("db/"+lifecycle.TableDir("t0"), shape) {
		select {
		case keys <- k:
		case err = <-errs:
		}
		if err != nil {
			break
		}
	}
	close(keys)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

// azureFloor is the request floor of one purged table of n objects on
// Azure: the S3 rule with Blob Batch's 256 deletes per request.
func azureFloor(n int) int64 {
	return int64(ceilDiv(n, azPage) + ceilDiv(n, azBatch) + 8)
}

// azureSection renders the Azure scenarios beside reaper's S3 figures.
func (r *report) azureSection(b *strings.Builder) {
	scens := r.scenarios("azure/")
	if len(scens) == 0 {
		return
	}
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("\n## Azure Blob Storage purge: one table, on Azurite\n\n")
	w("reaper purging one table from an `az://` root on Azurite %s (in memory, 127.0.0.1), the table written through the Blob API before each run. Requests counted by a proxy between reaper and Azurite. **Emulator figures are not cloud figures**: Azurite spends time linear in the blobs it holds on each request (docs/BACKENDS.md), so objects/s here says nothing about Azure's own rate; the request counts carry over. Floor: ceil(N/1000) listings + ceil(N/256) Blob Batch requests + 8.\n\n", r.Tools.Versions["azurite"])
	w("| scenario | runs | median | objects/s | requests (median run) | floor | S3 reaper median, same N |\n|---|---|---|---|---|---|---|\n")
	for _, scen := range scens {
		s := r.find(scen, "reaper")
		s3 := "—"
		if x := r.find("s3/"+strings.TrimPrefix(scen, "azure/"), "reaper"); x != nil && len(x.Samples) > 0 {
			s3 = fmt.Sprintf("%s (%.0f objects/s, %d requests)", fmtDur(x.median()), x.rate(), sum(x.requests()))
		}
		w("| %s | %d | %s | %.0f | %d: %s | %d | %s |\n", scen, len(s.Samples), fmtDur(s.median()), s.rate(), sum(s.requests()), fmtOps(s.requests()), azureFloor(s.Objects), s3)
	}
}

// azureTargets holds each Azure run to the floor, as the S3 target does:
// the whole command's requests (the worst run) minus the pass's perRoot.
func (r *report) azureTargets() []target {
	var ts []target
	for _, scen := range r.scenarios("azure/") {
		rs := r.find(scen, "reaper")
		got, ops := rs.maxRequests()
		table, bound := got-perRoot, azureFloor(rs.Objects)
		ts = append(ts, target{
			Name: fmt.Sprintf("Azure requests per purged table of %d objects (Azurite)", rs.Objects),
			Want: fmt.Sprintf("<= %d", bound),
			Got:  fmt.Sprintf("%d (whole command %d minus %d per root: %s)", table, got, perRoot, fmtOps(ops)),
			Pass: table <= bound, Why: whyRequests,
		})
	}
	return ts
}
