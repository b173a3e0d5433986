package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lance-reaper/reaper/internal/faketable"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// The memory scenario: peak RSS of `reaper status`, `reaper purge
// --dry-run` and a real purge pass over one local root of many top-level
// entries, with the shipped GOMEMLIMIT, for this tree's reaper and,
// with --memory-baseline, for an earlier revision's on the same root.
//
// A root of E top-level entries holds E/2 tables, each a directory with
// one file (<name>.lance/_latest.manifest) and its soft-delete marker:
// every name costs the listing two entries and a marker read, the most a
// name of a root costs to plan. Three marker profiles are measured on the
// same tables (the markers are rewritten between them):
//
//   - mostly not due (1 name in 100 due): the realistic worst case of a
//     big root, whose plan is nearly all not-due decisions;
//   - 40% due: a purge's due list is big, under the blast-radius rail's
//     default 50% (a dry run, so the root is left as it is);
//   - all due: a mass drop, which the blast-radius rail refuses (exit 3)
//     after the whole root was planned.
//
// The tables are written as files (no CLI) before the markers, and each
// marker is dated after them: a local file's LastModified is the later of
// its mtime and ctime, which cannot be set back, so a drop dated before
// the files would read as a writer after the drop (the identity fence). A
// due marker's TTL is 1 ms (hence --allow-short-ttl), a not-due one's 30
// days.

// memProfile is one marker layout of the memory root.
type memProfile struct {
	Name string
	// due reports whether name i is due.
	due func(i int) bool
}

var (
	profileMostlyNotDue = memProfile{"1% due", func(i int) bool { return i%100 == 0 }}
	profileManyDue      = memProfile{"40% due", func(i int) bool { return i%5 < 2 }}
	profileAllDue       = memProfile{"all due", func(int) bool { return true }}
)

// memCase is one measured command on a profile of the memory root.
type memCase struct {
	Name    string
	Profile memProfile
	Args    []string
	// Exit is the expected exit status (3: a rail refused the root).
	Exit int
	// Purges: the run deletes the due tables, which are written again
	// before the next run.
	Purges bool
	// check validates the command's stdout (counted, not kept: a status
	// of a million names prints hundreds of MB).
	check func(out *outputSink, names, due int) error
}

// auditDirArg stands in a case's arguments for the audit ledger's
// directory of the run.
const auditDirArg = "{audit}"

func memCases() []memCase {
	return []memCase{
		{Name: "status (table)", Profile: profileMostlyNotDue, Args: []string{"status"}, check: checkStatusRows(false)},
		{Name: "status -o json", Profile: profileMostlyNotDue, Args: []string{"status", "-o", "json"}, check: checkStatusRows(true)},
		{Name: "purge --dry-run", Profile: profileMostlyNotDue, Args: []string{"purge", "--dry-run", "--allow-short-ttl", "-o", "json"}, check: checkPurgeCounts(false)},
		// The audit ledger writes a row per table the pass decided: a
		// root of a million names makes a million rows.
		{Name: "purge --dry-run, audit ledger", Profile: profileMostlyNotDue, Args: []string{"purge", "--dry-run", "--allow-short-ttl", "-o", "json", "--set", "audit.location=" + auditDirArg}, check: checkPurgeCounts(false)},
		{Name: "purge", Profile: profileMostlyNotDue, Args: []string{"purge", "--allow-short-ttl", "-o", "json"}, Purges: true, check: checkPurgeCounts(false)},
		{Name: "purge --dry-run", Profile: profileManyDue, Args: []string{"purge", "--dry-run", "--allow-short-ttl", "-o", "json"}, check: checkPurgeCounts(false)},
		{Name: "purge (refused: blast radius)", Profile: profileAllDue, Args: []string{"purge", "--allow-short-ttl", "-o", "json"}, Exit: 3, check: checkPurgeCounts(true)},
	}
}

// memBinary is one reaper build the scenario measures.
type memBinary struct {
	Label, Path string
}

// memoryScenario measures every case at every size in c.MemEntries.
func memoryScenario(ctx context.Context, c config, t tools, rep *report) error {
	lim, err := shippedLimits(c.Repo)
	if err != nil {
		return err
	}
	rep.MemLimits = lim
	bins := []memBinary{{Label: "this tree (" + strings.Fields(t.Versions["reaper"] + " ?")[0] + ")", Path: t.Reaper}}
	if c.MemBaseline != "" {
		b, err := buildBaseline(ctx, c, c.MemBaseline)
		if err != nil {
			return err
		}
		bins = append([]memBinary{b}, bins...)
	}
	for _, b := range bins {
		rep.MemBinaries = append(rep.MemBinaries, b.Label)
	}
	for _, entries := range c.MemEntries {
		if err := memorySize(ctx, c, bins, entries, lim, rep); err != nil {
			return err
		}
	}
	return nil
}

// memorySize builds one root of entries top-level entries and runs every
// case on it with every binary.
func memorySize(ctx context.Context, c config, bins []memBinary, entries int, lim shipped, rep *report) error {
	names := entries / 2
	root := filepath.Join(c.WorkDir, fmt.Sprintf("memory-%d", entries), "db")
	defer os.RemoveAll(filepath.Dir(root))
	start := time.Now()
	if err := writeMemTables(root, names, nil); err != nil {
		return err
	}
	logf("memory/%d: wrote %d tables in %s", entries, names, time.Since(start).Round(time.Second))
	var profile memProfile
	for _, mc := range memCases() {
		if mc.Profile.Name != profile.Name {
			profile = mc.Profile
			start := time.Now()
			if err := writeMemMarkers(root, names, profile.due, nil); err != nil {
				return err
			}
			logf("memory/%d: wrote %d markers (%s) in %s", entries, names, profile.Name, time.Since(start).Round(time.Second))
		}
		due := 0
		for i := range names {
			if profile.due(i) {
				due++
			}
		}
		scen := fmt.Sprintf("memory/%d", entries)
		byBin := map[string]*series{}
		for _, b := range bins {
			s := &series{Scenario: scen, Contender: b.Label, Case: mc.Name + ", " + profile.Name, Objects: names}
			byBin[b.Label] = s
			rep.Memory = append(rep.Memory, s)
		}
		for r := range c.MemReps {
			for _, b := range rotateBins(bins, r) {
				argv := append([]string{b.Path}, mc.Args...)
				for i, a := range argv {
					argv[i] = strings.ReplaceAll(a, auditDirArg, filepath.Join(c.WorkDir, fmt.Sprintf("audit-%d", entries)))
				}
				argv = append(argv, "--root", root, "--log-level", "warn")
				env := []string{"GOMEMLIMIT=" + lim.GoMemLimit, "TMPDIR=" + c.WorkDir, "GODEBUG=gctrace=1"}
				sink := &outputSink{}
				syscall.Sync()
				res, err := measureWith(ctx, env, sink, mc.Exit, argv...)
				if err != nil {
					return err
				}
				if err := mc.check(sink, names, due); err != nil {
					return fmt.Errorf("%s, %s, %s: %w", scen, mc.Name, b.Label, err)
				}
				s := byBin[b.Label]
				s.add(sample{Wall: res.Wall, MaxRSS: res.MaxRSS, MaxAnon: res.MaxAnon, MaxLive: maxLiveHeap(res.Stderr)})
				s.Command = "GOMEMLIMIT=" + lim.GoMemLimit + " " + strings.Join(append([]string{"reaper"}, argv[1:]...), " ")
				logf("%s %s, %s, %s rep %d: %s, peak RSS %s (anonymous %s), live heap %s", scen, mc.Name, profile.Name, b.Label, r+1,
					res.Wall.Round(time.Millisecond), mib(res.MaxRSS), mib(res.MaxAnon), mib(maxLiveHeap(res.Stderr)))
				if mc.Purges {
					if err := restoreDue(root, names, profile.due); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// rotateBins alternates which binary runs first between repetitions.
func rotateBins(bins []memBinary, r int) []memBinary {
	r %= len(bins)
	return append(append([]memBinary{}, bins[r:]...), bins[:r]...)
}

// writeMemTables creates names tables (only those for which keep says so,
// when keep is not nil), 8 at a time, each a directory and one small file
// (<name>.lance/_latest.manifest): the least a table costs to plan.
func writeMemTables(root string, names int, keep func(int) bool) error {
	return parallelNames(names, keep, func(i int) error {
		dir := filepath.Join(root, lifecycle.TableDir(memName(i)))
		for rel := range (faketable.Shape{Latest: true}).Keys() {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte("lance"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeMemMarkers writes every name's marker (only those for which keep
// says so, when not nil), dated now: due ones with a 1 ms TTL, the others
// with 30 days.
func writeMemMarkers(root string, names int, due, keep func(int) bool) error {
	now := time.Now()
	dueBody := lifecycle.EncodeMarker(now, time.Millisecond)
	laterBody := lifecycle.EncodeMarker(now, 30*24*time.Hour)
	return parallelNames(names, keep, func(i int) error {
		body := laterBody
		if due(i) {
			body = dueBody
		}
		return os.WriteFile(filepath.Join(root, lifecycle.MarkerKey(memName(i))), body, 0o644)
	})
}

// restoreDue writes again the due tables a real purge removed, then their
// markers (after the files: see the top of this file).
func restoreDue(root string, names int, due func(int) bool) error {
	if err := writeMemTables(root, names, due); err != nil {
		return err
	}
	return writeMemMarkers(root, names, due, due)
}

func memName(i int) string { return fmt.Sprintf("t%07d", i) }

// parallelNames calls fn for every name index (for which keep says so),
// from 8 goroutines, and returns the first error.
func parallelNames(names int, keep func(int) bool, fn func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	ch := make(chan int, 1024)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range names {
		if keep == nil || keep(i) {
			ch <- i
		}
	}
	close(ch)
	wg.Wait()
	return first
}

// outputSink counts a command's stdout and keeps it only while it is
// small enough to parse (a purge report); a status of a million names is
// counted by its rows.
type outputSink struct {
	n     int64
	lines int64
	names int64 // lines starting with `    "name": ` (a JSON status row)
	buf   bytes.Buffer
	part  []byte // the current line's start
}

// keepMax is how much output a sink keeps for checking (a purge report of
// a million names is about 150 MB: kept, the harness can parse it).
const keepMax = 1 << 30

func (o *outputSink) Write(p []byte) (int, error) {
	n := len(p)
	o.n += int64(n)
	if o.buf.Len() < keepMax {
		o.buf.Write(p)
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(o.part) < 64 {
				o.part = append(o.part, p[:min(len(p), 64)]...)
			}
			return n, nil
		}
		line := append(o.part, p[:i]...)
		o.lines++
		if bytes.HasPrefix(line, []byte(`    "name": `)) {
			o.names++
		}
		o.part = o.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

// checkStatusRows checks a status printed one row per name.
func checkStatusRows(json bool) func(out *outputSink, names, due int) error {
	return func(out *outputSink, names, _ int) error {
		got := out.lines - 1 // the header
		if json {
			got = out.names
		}
		if got != int64(names) {
			return fmt.Errorf("status printed %d rows, want %d", got, names)
		}
		return nil
	}
}

// checkPurgeCounts checks a purge report: every due table purged (or
// would be), the others skipped not due; refused: every table skipped.
func checkPurgeCounts(refused bool) func(out *outputSink, names, due int) error {
	return func(out *outputSink, names, due int) error {
		var rep struct {
			Purged  []struct{} `json:"purged"`
			Skipped []struct {
				Code string `json:"code"`
			} `json:"skipped"`
			Failed []json.RawMessage `json:"failed"`
		}
		if err := json.Unmarshal(out.buf.Bytes(), &rep); err != nil {
			return fmt.Errorf("purge output: %w: %s", err, tail(out.buf.String(), 400))
		}
		wantPurged, wantSkipped := due, names-due
		if refused {
			wantPurged, wantSkipped = 0, names
		}
		if len(rep.Purged) != wantPurged || len(rep.Skipped) != wantSkipped || len(rep.Failed) > 0 {
			return fmt.Errorf("purge: %d purged, %d skipped, %d failed; want %d, %d, 0", len(rep.Purged), len(rep.Skipped), len(rep.Failed), wantPurged, wantSkipped)
		}
		return nil
	}
}

// measureWith is measure with stdout streamed to out and exit status
// wantExit accepted as success.
func measureWith(ctx context.Context, env []string, out io.Writer, wantExit int, argv ...string) (runResult, error) {
	res, err := measureTo(ctx, env, out, argv...)
	var ee *exec.ExitError
	if wantExit != 0 && asExit(err, &ee) && ee.ExitCode() == wantExit {
		return res, nil
	}
	if err == nil && wantExit != 0 {
		return res, fmt.Errorf("%s: exit status 0, want %d", strings.Join(argv, " "), wantExit)
	}
	return res, err
}

// buildBaseline builds reaper at git revision rev (as `make build` does,
// without the version stamp) into the scratch directory.
func buildBaseline(ctx context.Context, c config, rev string) (memBinary, error) {
	src := filepath.Join(c.WorkDir, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return memBinary{}, err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", "git archive --format=tar \"$1\" | tar -x -C \"$2\"", "sh", rev, src)
	archive.Dir = c.Repo
	archive.Stderr = os.Stderr
	if err := archive.Run(); err != nil {
		return memBinary{}, fmt.Errorf("git archive %s: %w", rev, err)
	}
	full := strings.TrimSpace(out(ctx, c.Repo, "git", "rev-parse", "--short", rev))
	bin := filepath.Join(c.WorkDir, "bin", "reaper-"+full)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/reaper")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-tags=arrow_json_stdlib")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	logf("memory: building reaper at %s (%s)", rev, full)
	if err := build.Run(); err != nil {
		return memBinary{}, fmt.Errorf("build reaper at %s: %w", rev, err)
	}
	return memBinary{Label: "before (" + full + ")", Path: bin}, nil
}

// maxLiveHeap is the largest live heap in a gctrace log: each line says
// "gc N @...: ..., A->B->C MB, ...", C being the heap marked live.
func maxLiveHeap(stderr []byte) int64 {
	var peak int64
	for _, line := range bytes.Split(stderr, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("gc ")) {
			continue
		}
		for _, f := range strings.Split(string(line), ", ") {
			heap, ok := strings.CutSuffix(f, " MB")
			if parts := strings.Split(heap, "->"); ok && len(parts) == 3 {
				if n, err := strconv.ParseInt(parts[2], 10, 64); err == nil {
					peak = max(peak, n<<20)
				}
			}
		}
	}
	return peak
}
