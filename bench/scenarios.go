package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// sample is one measured run of one contender.
type sample struct {
	Wall   time.Duration
	MaxRSS int64
	// MaxAnon is the peak anonymous RSS (runResult.MaxAnon).
	MaxAnon int64 `json:",omitempty"`
	// MaxLive is the largest live heap a GC of the run marked
	// (GODEBUG=gctrace=1), in bytes: what the Go runtime could not free,
	// the figure a memory limit must hold with room for the collector.
	MaxLive int64 `json:",omitempty"`
	// Server is the request count by operation from versitygw's access log;
	// Client is reaper's own count (reaper_s3_http_requests_total).
	Server, Client map[string]int64
	// DeleteConc is where reaper's adaptive delete concurrency ended, from
	// its "purge finished" log line (0: not reaper, or not logged).
	DeleteConc int `json:",omitempty"`
}

// series is every run of one contender in one scenario.
type series struct {
	Scenario  string // e.g. "s3/10000"
	Contender string // reaper, awscli, rclone, rm -rf
	// Case is the command and root of a memory scenario's series
	// ("status -o json, 1% due"); Contender is then the build.
	Case    string `json:",omitempty"`
	Objects int    // objects deleted per run
	Command string // the command line (one run's)
	Samples []sample
}

func (s *series) add(x sample) { s.Samples = append(s.Samples, x) }

// runScenarios runs every scenario in order and fills rep, calling
// checkpoint after each.
func runScenarios(ctx context.Context, c config, t tools, rep *report, checkpoint func() error) error {
	now := time.Now()
	gw, err := startGateway(ctx, t.VersityGW, c.WorkDir)
	if err != nil {
		return err
	}
	defer gw.stop()
	rep.Endpoint = gw.Endpoint
	if c.Only == "retention" {
		return retentionScenarios(ctx, c, t, gw, rep, checkpoint)
	}
	if c.Only == "retention-read" {
		return retentionReadScenarios(ctx, c, t, gw, rep, checkpoint)
	}
	if c.Only == "retention-idle" {
		return retentionIdleScenarios(ctx, c, t, gw, rep, checkpoint)
	}
	var steps []func() error
	for _, n := range c.Sizes {
		steps = append(steps, func() error { return s3Purge(ctx, c, t, gw, n, now, rep) })
	}
	if t.FakeGCS != "" {
		fg, err := startFakeGCS(ctx, t.FakeGCS, c.WorkDir)
		if err != nil {
			return err
		}
		defer fg.stop()
		for _, n := range c.GCSSizes {
			steps = append(steps, func() error { return gcsPurge(ctx, c, t, fg, n, rep) })
		}
	}
	if len(c.AzureSizes) > 0 {
		az, err := startAzurite(ctx, t.Azurite, c.WorkDir)
		if err != nil {
			return err
		}
		defer az.stop()
		for _, n := range c.AzureSizes {
			steps = append(steps, func() error { return azurePurge(ctx, c, t, az, n, rep) })
		}
	}
	for _, n := range c.LocalSizes {
		steps = append(steps, func() error { return localPurge(ctx, c, t, n, c.Reps, true, now, rep) })
	}
	if c.RSSObjects > 0 {
		steps = append(steps, func() error {
			rep.RSSScenario = fmt.Sprintf("local/%d", c.RSSObjects)
			return localPurge(ctx, c, t, c.RSSObjects, c.RSSReps, c.RSSPeer, now, rep)
		})
	}
	if c.StatusTables > 0 {
		steps = append(steps, func() error { return statusScan(ctx, c, t, gw, now, rep) })
	}
	if c.Roots > 0 {
		steps = append(steps, func() error { return rootsPass(ctx, c, t, gw, now, rep) })
	}
	if len(c.MemEntries) > 0 {
		steps = append(steps, func() error { return memoryScenario(ctx, c, t, rep) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
		if err := checkpoint(); err != nil {
			return err
		}
	}
	if err := retentionScenarios(ctx, c, t, gw, rep, checkpoint); err != nil {
		return err
	}
	if err := retentionReadScenarios(ctx, c, t, gw, rep, checkpoint); err != nil {
		return err
	}
	return retentionIdleScenarios(ctx, c, t, gw, rep, checkpoint)
}

// rotate returns xs started at offset i, so contenders alternate in order
// between repetitions.
func rotate(xs []string, i int) []string {
	i %= len(xs)
	return append(append([]string{}, xs[i:]...), xs[:i]...)
}

// floorName is the contender bench/floor runs as: the reference reaper's
// wall time is held to, not a peer.
const floorName = "floor"

// s3Contenders are reaper, the floor, and the peers that are installed.
func s3Contenders(c config, t tools, n int) []string {
	out := []string{"reaper", floorName}
	for _, p := range c.Peers {
		switch {
		case p == "awscli" && c.AWSMaxObjects > 0 && n > c.AWSMaxObjects:
			logf("s3/%d: awscli skipped above --awscli-max-objects %d (one DeleteObject per key: ~5 min a run at 100,000)", n, c.AWSMaxObjects)
		case p == "awscli" && t.AWS != "", p == "rclone" && t.Rclone != "":
			out = append(out, p)
		default:
			logf("peer %s not installed or unknown: skipped", p)
		}
	}
	return out
}

// s3Purge deletes one table of n objects per contender and repetition, each
// on a fresh bucket holding an identical copy of the table.
func s3Purge(ctx context.Context, c config, t tools, gw *gateway, n int, now time.Time, rep *report) error {
	tpl := filepath.Join(c.WorkDir, fmt.Sprintf("tpl-%d", n))
	logf("s3/%d: writing the template table", n)
	if err := writeTable(tpl, n, c.ObjSize, dataMtime(now), 4); err != nil {
		return err
	}
	defer os.RemoveAll(tpl)
	scen := fmt.Sprintf("s3/%d", n)
	byName := map[string]*series{}
	contenders := s3Contenders(c, t, n)
	for _, name := range contenders {
		byName[name] = &series{Scenario: scen, Contender: name, Objects: n}
		rep.Series = append(rep.Series, byName[name])
	}
	awsCfg := filepath.Join(c.WorkDir, "aws-config")
	if err := os.WriteFile(awsCfg, []byte("[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n"), 0o644); err != nil {
		return err
	}
	rcloneCfg := filepath.Join(c.WorkDir, "rclone.conf")
	if err := os.WriteFile(rcloneCfg, nil, 0o644); err != nil {
		return err
	}
	for r := range c.Reps {
		for _, name := range rotate(contenders, r) {
			bucket := fmt.Sprintf("bench-%s-%d-%d", name, n, r)
			dir, err := gw.createBucket(ctx, bucket)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
				return err
			}
			if err := exec.CommandContext(ctx, "cp", "-a", tpl, filepath.Join(dir, "db", lifecycle.TableDir("t0"))).Run(); err != nil {
				return fmt.Errorf("copy template: %w", err)
			}
			if err := writeDueMarker(filepath.Join(dir, "db", lifecycle.MarkerKey("t0")), now); err != nil {
				return err
			}
			if r == 0 {
				got, err := gw.count(ctx, bucket, "db/"+lifecycle.TableDir("t0"))
				if err != nil {
					return err
				}
				if got != n {
					return fmt.Errorf("%s: ListObjectsV2 sees %d objects, want %d", bucket, got, n)
				}
			}
			syscall.Sync()
			var argv, env []string
			prom := filepath.Join(c.WorkDir, bucket+".prom")
			switch name {
			case "reaper":
				argv = append([]string{t.Reaper, "purge", "--root", "s3://" + bucket + "/db"}, storageFlags(gw)...)
				argv = append(argv, "--allow-short-ttl", "-o", "json", "--log-level", "info", "--log-format", "json", "--textfile", prom)
				if c.DeleteConc > 0 {
					argv = append(argv, "--set", fmt.Sprintf("limits.delete_concurrency=%d", c.DeleteConc))
				}
			case floorName:
				argv = []string{t.Floor, "--endpoint", gw.Endpoint, "--bucket", bucket, "--prefix", "db/" + lifecycle.TableDir("t0"), "--region", gwRegion}
				env = []string{"AWS_ACCESS_KEY_ID=" + gwAccess, "AWS_SECRET_ACCESS_KEY=" + gwSecret}
			case "awscli":
				argv = []string{t.AWS, "s3", "rm", "--recursive", "--only-show-errors", "--endpoint-url", gw.Endpoint, "s3://" + bucket + "/db/" + lifecycle.TableDir("t0")}
				env = []string{"AWS_ACCESS_KEY_ID=" + gwAccess, "AWS_SECRET_ACCESS_KEY=" + gwSecret, "AWS_DEFAULT_REGION=" + gwRegion,
					"AWS_CONFIG_FILE=" + awsCfg, "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
			case "rclone":
				argv = []string{t.Rclone, "purge", "bench:" + bucket + "/db/" + strings.TrimSuffix(lifecycle.TableDir("t0"), "/")}
				env = []string{"RCLONE_CONFIG=" + rcloneCfg, "RCLONE_CONFIG_BENCH_TYPE=s3", "RCLONE_CONFIG_BENCH_PROVIDER=Other",
					"RCLONE_CONFIG_BENCH_ENDPOINT=" + gw.Endpoint, "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=" + gwAccess,
					"RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=" + gwSecret, "RCLONE_CONFIG_BENCH_REGION=" + gwRegion,
					"RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE=true"}
			}
			off := gw.logOffset()
			res, err := measure(ctx, env, argv...)
			if err != nil {
				return err
			}
			s := sample{Wall: res.Wall, MaxRSS: res.MaxRSS}
			if s.Server, err = gw.requestsSince(off, bucket); err != nil {
				return err
			}
			switch name {
			case "reaper":
				if err := checkPurged(res.Stdout, n); err != nil {
					return fmt.Errorf("%s: %w", bucket, err)
				}
				if s.Client, err = promRequests(prom); err != nil {
					return err
				}
				if s.DeleteConc, err = finalConcurrency(res.Stderr); err != nil {
					return fmt.Errorf("%s: %w", bucket, err)
				}
			case floorName:
				if err := checkFloor(res.Stdout, n); err != nil {
					return fmt.Errorf("%s: %w", bucket, err)
				}
			}
			left, err := gw.count(ctx, bucket, "db/"+lifecycle.TableDir("t0"))
			if err != nil {
				return err
			}
			if left != 0 {
				return fmt.Errorf("%s: %s left %d objects", bucket, name, left)
			}
			byName[name].add(s)
			byName[name].Command = redact(strings.Join(argv, " "))
			logf("%s %-7s rep %d: %s, %d requests, %.1f MiB", scen, name, r+1, res.Wall.Round(time.Millisecond), sum(s.Server), float64(res.MaxRSS)/(1<<20))
			gw.deleteBucket(ctx, bucket)
		}
	}
	return nil
}

func storageFlags(gw *gateway) []string {
	var out []string
	for _, kv := range gw.storageOptions() {
		out = append(out, "--storage-option", kv)
	}
	return out
}

// redact hides the benchmark's throwaway secret in reported commands.
func redact(s string) string { return strings.ReplaceAll(s, gwSecret, "$SECRET") }

// checkPurged checks reaper's purge JSON: one table purged with n objects.
func checkPurged(stdout []byte, n int) error {
	var out struct {
		Purged []struct {
			Name    string `json:"name"`
			Objects int    `json:"objects"`
		} `json:"purged"`
		Skipped []json.RawMessage `json:"skipped"`
		Failed  []json.RawMessage `json:"failed"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return fmt.Errorf("purge output: %w: %s", err, tail(string(stdout), 400))
	}
	total := 0
	for _, p := range out.Purged {
		total += p.Objects
	}
	if total != n || len(out.Failed) > 0 || len(out.Skipped) > 0 {
		return fmt.Errorf("purge deleted %d objects, want %d: %s", total, n, tail(string(stdout), 400))
	}
	return nil
}

// checkFloor checks bench/floor's output line: n objects deleted.
func checkFloor(stdout []byte, n int) error {
	var out struct {
		Objects int `json:"objects"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return fmt.Errorf("floor output: %w: %s", err, tail(string(stdout), 400))
	}
	if out.Objects != n {
		return fmt.Errorf("floor deleted %d objects, want %d", out.Objects, n)
	}
	return nil
}

// localPurge compares reaper's purge of a local table with rm -rf, each on a
// freshly written copy, reps times.
func localPurge(ctx context.Context, c config, t tools, n, reps int, withPeer bool, now time.Time, rep *report) error {
	scen := fmt.Sprintf("local/%d", n)
	contenders := []string{"reaper"}
	if withPeer {
		contenders = append(contenders, "rm -rf")
	}
	byName := map[string]*series{}
	for _, name := range contenders {
		byName[name] = &series{Scenario: scen, Contender: name, Objects: n}
		rep.Series = append(rep.Series, byName[name])
	}
	for r := range reps {
		for _, name := range rotate(contenders, r) {
			root := filepath.Join(c.WorkDir, "local", fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(name, " ", ""), n, r), "db")
			gen := time.Now()
			if err := writeTable(filepath.Join(root, lifecycle.TableDir("t0")), n, c.ObjSize, dataMtime(now), 4); err != nil {
				return err
			}
			// A local file's LastModified is the later of its mtime and its
			// ctime, which cannot be set back: the drop is dated after the
			// files were written (the identity fence), and the TTL is 1 ms
			// (due-ness counts it from the marker's LastModified too).
			if err := os.WriteFile(filepath.Join(root, lifecycle.MarkerKey("t0")), lifecycle.EncodeMarker(time.Now(), time.Millisecond), 0o644); err != nil {
				return err
			}
			syscall.Sync()
			if n >= 100_000 {
				logf("%s: wrote %d files in %s", scen, n, time.Since(gen).Round(time.Second))
			}
			var argv []string
			if name == "reaper" {
				argv = []string{t.Reaper, "purge", "--root", root, "--allow-short-ttl", "-o", "json", "--log-level", "warn"}
				if c.DeleteConc > 0 {
					argv = append(argv, "--set", fmt.Sprintf("limits.delete_concurrency=%d", c.DeleteConc))
				}
			} else {
				argv = []string{"rm", "-rf", filepath.Join(root, lifecycle.TableDir("t0"))}
			}
			res, err := measure(ctx, []string{"TMPDIR=" + c.WorkDir}, argv...)
			if err != nil {
				return err
			}
			if name == "reaper" {
				if err := checkPurged(res.Stdout, n); err != nil {
					return fmt.Errorf("%s: %w", root, err)
				}
			}
			if _, err := os.Stat(filepath.Join(root, lifecycle.TableDir("t0"))); err == nil {
				if ents, _ := os.ReadDir(filepath.Join(root, lifecycle.TableDir("t0"))); len(ents) > 0 {
					return fmt.Errorf("%s: %s left files", root, name)
				}
			}
			byName[name].add(sample{Wall: res.Wall, MaxRSS: res.MaxRSS, MaxAnon: res.MaxAnon})
			byName[name].Command = strings.Join(argv, " ")
			logf("%s %-7s rep %d: %s, %.1f MiB", scen, name, r+1, res.Wall.Round(time.Millisecond), float64(res.MaxRSS)/(1<<20))
			os.RemoveAll(filepath.Dir(root))
		}
	}
	return nil
}
