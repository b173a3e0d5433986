package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/metrics"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// writeFiles creates the files (paths relative to dir) with a small body
// and an old modification time, 8 at a time.
func writeFiles(dir string, paths []string, mtime time.Time) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	ch := make(chan string, 256)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				full := filepath.Join(dir, p)
				err := os.MkdirAll(filepath.Dir(full), 0o755)
				if err == nil {
					err = os.WriteFile(full, []byte("lance"), 0o644)
				}
				if err == nil {
					err = os.Chtimes(full, mtime, mtime)
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range paths {
		ch <- p
	}
	close(ch)
	wg.Wait()
	return first
}

// statusScan times `reaper status` on one root holding StatusTables tables,
// StatusDeleted of them soft-deleted (not due), and counts its requests.
func statusScan(ctx context.Context, c config, t tools, gw *gateway, now time.Time, rep *report) error {
	const bucket = "bench-status"
	dir, err := gw.createBucket(ctx, bucket)
	if err != nil {
		return err
	}
	defer gw.deleteBucket(ctx, bucket)
	logf("status: creating %d tables, %d soft-deleted", c.StatusTables, c.StatusDeleted)
	var paths []string
	markers := map[string][]byte{}
	notDue := lifecycle.EncodeMarker(now.Add(-time.Hour), lifecycle.DefaultTTL)
	for i := range c.StatusTables {
		paths = append(paths, tableKeys("db/"+lifecycle.TableDir(fmt.Sprintf("t%05d", i)), faketable.Shape{Manifests: 1})...)
		if i < c.StatusDeleted {
			markers["db/"+lifecycle.MarkerKey(fmt.Sprintf("t%05d", i))] = notDue
		}
	}
	if err := writeFiles(dir, paths, dataMtime(now)); err != nil {
		return err
	}
	if err := gw.putMany(ctx, bucket, markers); err != nil {
		return err
	}
	if got, err := gw.count(ctx, bucket, "db/"); err != nil || got != c.StatusTables+c.StatusDeleted {
		return fmt.Errorf("status root: ListObjectsV2 sees %d objects (%v), want %d", got, err, c.StatusTables+c.StatusDeleted)
	}
	root := "s3://" + bucket + "/db"
	s := &series{Scenario: fmt.Sprintf("status/%d", c.StatusTables), Contender: "reaper status", Objects: c.StatusTables}
	rep.Status = s
	argv := append([]string{t.Reaper, "status", "--root", root}, storageFlags(gw)...)
	argv = append(argv, "-o", "json", "--log-level", "warn")
	s.Command = redact(strings.Join(argv, " "))
	for r := range c.Reps {
		off := gw.logOffset()
		res, err := measure(ctx, nil, argv...)
		if err != nil {
			return err
		}
		var sts []json.RawMessage
		if err := json.Unmarshal(res.Stdout, &sts); err != nil || len(sts) != c.StatusTables {
			return fmt.Errorf("status printed %d tables (%v), want %d", len(sts), err, c.StatusTables)
		}
		x := sample{Wall: res.Wall, MaxRSS: res.MaxRSS}
		if x.Server, err = gw.requestsSince(off, bucket); err != nil {
			return err
		}
		s.add(x)
		logf("status rep %d: %s, %d requests", r+1, res.Wall.Round(time.Millisecond), sum(x.Server))
	}
	// Once in-process, through reaper's own instrumented transport: the
	// client-side count, to cross-check the server's access log.
	counter := metrics.NewRequestCounter(nil, nil)
	store, err := all.Default().Open(ctx, root, gw.optionsMap(), objstore.OpenEnv{Transport: counter})
	if err != nil {
		return err
	}
	ns, err := lifecycle.New(store, lifecycle.Options{})
	if err != nil {
		return err
	}
	if _, err := ns.List(ctx); err != nil {
		return err
	}
	rep.StatusClient = counter.Counts()
	return nil
}

// rootsPass times one configured purge pass over c.Roots small roots found
// by a discover pattern, each with a live table and a due soft-deleted
// table of 10 objects, then a second pass that finds nothing due.
func rootsPass(ctx context.Context, c config, t tools, gw *gateway, now time.Time, rep *report) error {
	const bucket = "bench-roots"
	dir, err := gw.createBucket(ctx, bucket)
	if err != nil {
		return err
	}
	defer gw.deleteBucket(ctx, bucket)
	logf("roots: creating %d roots", c.Roots)
	var paths, markers []string
	for i := range c.Roots {
		p := fmt.Sprintf("tenants/r%04d/", i)
		paths = append(paths, tableKeys(p+lifecycle.TableDir("live"), faketable.Shape{Manifests: 1, Data: 1})...)
		paths = append(paths, tableKeys(p+lifecycle.TableDir("old"), faketable.Spread(10))...)
		markers = append(markers, p+lifecycle.MarkerKey("old"))
	}
	if err := writeFiles(dir, paths, dataMtime(now)); err != nil {
		return err
	}
	for _, m := range markers {
		if err := writeDueMarker(filepath.Join(dir, m), now); err != nil {
			return err
		}
	}
	opts, _ := json.Marshal(gw.optionsMap())
	cfg := fmt.Sprintf("log: {format: text, level: warn}\nlisten: \"\"\ndiscover:\n  - uri: s3://%s/tenants/*/\n    storage_options: %s\nmetrics: {per_root_labels: false}\n", bucket, opts)
	cfgPath := filepath.Join(c.WorkDir, "roots.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	for pass := 1; pass <= 2; pass++ {
		prom := filepath.Join(c.WorkDir, fmt.Sprintf("roots-%d.prom", pass))
		argv := []string{t.Reaper, "purge", "--config", cfgPath, "--allow-short-ttl", "-o", "json", "--textfile", prom}
		off := gw.logOffset()
		res, err := measure(ctx, nil, argv...)
		if err != nil {
			return err
		}
		var out struct {
			Purged []struct {
				Objects int `json:"objects"`
			} `json:"purged"`
			Failed []json.RawMessage `json:"failed"`
		}
		if err := json.Unmarshal(res.Stdout, &out); err != nil {
			return fmt.Errorf("roots pass %d: %w", pass, err)
		}
		objs := 0
		for _, p := range out.Purged {
			objs += p.Objects
		}
		want := map[int]int{1: c.Roots * 10, 2: 0}[pass]
		if objs != want || len(out.Failed) > 0 {
			return fmt.Errorf("roots pass %d: purged %d objects in %d tables, %d failed; want %d objects", pass, objs, len(out.Purged), len(out.Failed), want)
		}
		x := sample{Wall: res.Wall, MaxRSS: res.MaxRSS}
		if x.Server, err = gw.requestsSince(off, bucket); err != nil {
			return err
		}
		if x.Client, err = promRequests(prom); err != nil {
			return err
		}
		s := &series{Scenario: fmt.Sprintf("roots/%d", c.Roots), Contender: map[int]string{1: "pass 1 (1 due table per root)", 2: "pass 2 (nothing due)"}[pass],
			Objects: objs, Command: strings.Join(argv, " "), Samples: []sample{x}}
		rep.Roots = append(rep.Roots, s)
		logf("roots pass %d: %s, %d requests", pass, res.Wall.Round(time.Millisecond), sum(x.Server))
	}
	return nil
}
