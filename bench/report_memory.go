package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// shipped is the memory the shipped Kubernetes resources give reaper: the
// CronJob's container memory limit and its GOMEMLIMIT, which the memory
// scenario runs with.
type shipped struct {
	File       string
	GoMemLimit string
	Limit      string
	LimitBytes int64
}

// cronJobFile is where the shipped limits are read from.
const cronJobFile = "deploy/kubernetes/cronjob/cronjob.yaml"

// shippedLimits reads the reaper container's memory limit and GOMEMLIMIT
// from the shipped CronJob.
func shippedLimits(repo string) (shipped, error) {
	b, err := os.ReadFile(filepath.Join(repo, cronJobFile))
	if err != nil {
		return shipped{}, err
	}
	var cj struct {
		Spec struct {
			JobTemplate struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name string `yaml:"name"`
								Env  []struct {
									Name  string `yaml:"name"`
									Value string `yaml:"value"`
								} `yaml:"env"`
								Resources struct {
									Limits map[string]string `yaml:"limits"`
								} `yaml:"resources"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			} `yaml:"jobTemplate"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &cj); err != nil {
		return shipped{}, fmt.Errorf("%s: %w", cronJobFile, err)
	}
	s := shipped{File: cronJobFile}
	for _, c := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers {
		if c.Name != "reaper" {
			continue
		}
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				s.GoMemLimit = e.Value
			}
		}
		s.Limit = c.Resources.Limits["memory"]
	}
	if s.LimitBytes, err = quantityBytes(s.Limit); err != nil || s.GoMemLimit == "" {
		return shipped{}, fmt.Errorf("%s: reaper container without a memory limit and GOMEMLIMIT (%q, %q): %v", cronJobFile, s.Limit, s.GoMemLimit, err)
	}
	return s, nil
}

// quantityBytes parses a Kubernetes memory quantity in binary units
// ("256Mi", "1Gi") or bytes.
func quantityBytes(q string) (int64, error) {
	for i, unit := range []string{"Ki", "Mi", "Gi"} {
		if n, ok := strings.CutSuffix(q, unit); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << (10 * (i + 1)), err
		}
	}
	return strconv.ParseInt(q, 10, 64)
}

// memory markers delimit the memory section in the results file, so a run
// of that scenario alone (--only memory) replaces it and nothing else.
const (
	memBegin = "<!-- memory:begin -->"
	memEnd   = "<!-- memory:end -->"
)

// memoryTargets holds this tree's binary under the shipped memory limit
// at every size.
func (r *report) memoryTargets() []target {
	var ts []target
	this := r.thisBinary()
	for _, scen := range r.memScenarios() {
		var peak int64
		worst := ""
		for _, s := range r.Memory {
			if s.Scenario == scen && s.Contender == this && s.maxRSS() > peak {
				peak, worst = s.maxRSS(), s.Case
			}
		}
		ts = append(ts, target{
			Name: fmt.Sprintf("peak RSS, %s top-level entries, every command", strings.TrimPrefix(scen, "memory/")),
			Want: fmt.Sprintf("< %s (the shipped memory limit, %s)", mib(r.MemLimits.LimitBytes), r.MemLimits.Limit),
			Got:  fmt.Sprintf("%s (%s)", mib(peak), worst),
			Pass: peak < r.MemLimits.LimitBytes, Why: "See the memory section below.",
		})
	}
	return ts
}

// thisBinary is the label of this tree's build (the last one measured).
func (r *report) thisBinary() string {
	if len(r.MemBinaries) == 0 {
		return ""
	}
	return r.MemBinaries[len(r.MemBinaries)-1]
}

func (r *report) memScenarios() []string {
	var out []string
	for _, s := range r.Memory {
		if !slices.Contains(out, s.Scenario) {
			out = append(out, s.Scenario)
		}
	}
	return out
}

// memorySection is the results file's memory section, between memBegin
// and memEnd.
func (r *report) memorySection() string {
	if len(r.Memory) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n## Memory: status and purge of a root of many tables\n\n", memBegin)
	if r.MemOnly {
		w("Measured by `go run ./bench %s`, %s, in %s: this section alone (the rest of the file is the run named at its top).\n\n",
			strings.Join(r.Args, " "), r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Round(time.Second))
		w("The benchmark applies no memory limit (no cgroup), only GOMEMLIMIT: each peak is compared with the limit shipped when this section was written.\n\n")
	}
	w("One local root of E top-level entries: E/2 tables, each a directory holding one file and its soft-delete marker (a marker read per name: the most a name costs a plan). Markers are rewritten between profiles: 1%% due (the realistic worst case: a plan of nearly all not-due decisions; the real purge deletes the 1%% and they are written again after each run), 40%% due (a dry run, under the blast-radius rail's 50%%), all due (a mass drop the blast-radius rail refuses, exit 3, after planning the whole root). Peak RSS is the child's VmHWM (polled every 5 ms from /proc), anonymous the peak of RssAnon (without the executable's own pages). Every run with GOMEMLIMIT=%s, the shipped CronJob's (%s, whose memory limit is %s). These machines are shared and noisy: walls vary by tens of percent between runs; peaks by a few MiB.\n\n",
		r.MemLimits.GoMemLimit, r.MemLimits.File, r.MemLimits.Limit)
	w("| target | wanted | measured | result |\n|---|---|---|---|\n")
	for _, t := range r.memoryTargets() {
		w("| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, verdict(t.Pass))
	}
	w("\n")
	for _, scen := range r.memScenarios() {
		r.memoryTable(&b, scen)
	}
	w("%s\n", r.memoryAnalysis())
	w("%s\n\n", memEnd)
	return b.String()
}

// memoryTable is one size's table: a row per command, the binaries side
// by side.
func (r *report) memoryTable(b *strings.Builder, scen string) {
	var cases []string
	for _, s := range r.Memory {
		if s.Scenario == scen && !slices.Contains(cases, s.Case) {
			cases = append(cases, s.Case)
		}
	}
	n := 0
	if len(r.Memory) > 0 {
		for _, s := range r.Memory {
			if s.Scenario == scen {
				n = s.Objects
				break
			}
		}
	}
	fmt.Fprintf(b, "### %s top-level entries (%d tables)\n\n| command, markers |", strings.TrimPrefix(scen, "memory/"), n)
	for _, bin := range r.MemBinaries {
		fmt.Fprintf(b, " %s: peak RSS (anonymous) | live heap | wall |", bin)
	}
	b.WriteString("\n|---|")
	for range r.MemBinaries {
		b.WriteString("---|---|---|")
	}
	b.WriteString("\n")
	for _, c := range cases {
		fmt.Fprintf(b, "| %s |", c)
		for _, bin := range r.MemBinaries {
			s := r.findMem(scen, c, bin)
			if s == nil || len(s.Samples) == 0 {
				b.WriteString(" — | — | — |")
				continue
			}
			fmt.Fprintf(b, " %s (%s) | %s | %s |", mib(s.maxRSS()), mib(s.maxAnon()), mib(s.maxLive()), fmtDur(s.median()))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (r *report) findMem(scen, c, bin string) *series {
	for _, s := range r.Memory {
		if s.Scenario == scen && s.Case == c && s.Contender == bin {
			return s
		}
	}
	return nil
}

// memoryAnalysis says, with this run's numbers, where the memory goes and
// how the shipped limits follow from it.
func (r *report) memoryAnalysis() string {
	var rows []string
	for _, scen := range r.memScenarios() {
		var peaks []string
		for _, bin := range r.MemBinaries {
			peak, _ := r.memPeak(scen, bin)
			peaks = append(peaks, fmt.Sprintf("%s %s", bin, mib(peak)))
		}
		rows = append(rows, fmt.Sprintf("at %s entries, %s", strings.TrimPrefix(scen, "memory/"), strings.Join(peaks, ", ")))
	}
	out := "**Where the memory goes.** Largest peak RSS of any command " + strings.Join(rows, "; ") + ". " + memoryDesign
	if s := r.memorySizing(); s != "" {
		out += "\n\n" + s
	}
	return out
}

// memPeak is a build's largest peak RSS at a size, and its largest live
// heap.
func (r *report) memPeak(scen, bin string) (rss, live int64) {
	for _, s := range r.Memory {
		if s.Scenario == scen && s.Contender == bin {
			rss, live = max(rss, s.maxRSS()), max(live, s.maxLive())
		}
	}
	return rss, live
}

// memorySizing says how the shipped limits hold this tree's largest size.
func (r *report) memorySizing() string {
	scens := r.memScenarios()
	if len(scens) == 0 {
		return ""
	}
	this, scen := r.thisBinary(), scens[len(scens)-1]
	rss, live := r.memPeak(scen, this)
	var pages int64 // what RSS holds beside anonymous memory: the executable's own pages
	for _, s := range r.Memory {
		if s.Contender == this {
			for _, x := range s.Samples {
				pages = max(pages, x.MaxRSS-x.MaxAnon)
			}
		}
	}
	gml, err := goMemLimitBytes(r.MemLimits.GoMemLimit)
	if err != nil || live == 0 {
		return ""
	}
	return fmt.Sprintf("**How the limits follow.** At %s entries this tree's largest live heap (what a collection could not free) was %s and its largest peak RSS %s, of which up to %s are the executable's own pages (RSS less RssAnon: the static binary's SDKs), which GOMEMLIMIT does not count. GOMEMLIMIT=%s is %.1fx that live heap, room for the collector to work without running back to back; the memory limit %s (%s) leaves GOMEMLIMIT plus those pages a margin of %s, and the peak RSS measured one of %s (%.0f%%). deploy/memory_test.go holds every reaper container to the limits measured here: change them with a new measurement.",
		strings.TrimPrefix(scen, "memory/"), mib(live), mib(rss), mib(pages), r.MemLimits.GoMemLimit, float64(gml)/float64(live),
		r.MemLimits.Limit, mib(r.MemLimits.LimitBytes), mib(r.MemLimits.LimitBytes-gml-pages), mib(r.MemLimits.LimitBytes-rss),
		100*float64(r.MemLimits.LimitBytes-rss)/float64(r.MemLimits.LimitBytes))
}

// goMemLimitBytes parses a GOMEMLIMIT value ("230MiB").
func goMemLimitBytes(v string) (int64, error) {
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			return x << u.shift, err
		}
	}
	return strconv.ParseInt(v, 10, 64)
}

// memoryDesign explains the numbers (docs/ARCHITECTURE.md has the rules).
const memoryDesign = "A plan and a status read the root's listing as it arrives: a name is described once the listing has passed every key it can have (all lie between <name>. and <name>.reaper-purge), by a fixed pool of 16 readers, so what is in flight is a window of the listing, not the root (internal/lifecycle/scan.go). What stays per name is what the report must print, compactly: a decision that did no work (not due, refused with the root, a limit) and a completed purge or dry run are briefs of some 60 to 90 bytes, a due table a brief plus its marker's LastModified and ETag (internal/worker/brief.go, due.go); `reaper status` and the purge report are written as they stream (JSON element by element, the status table in blocks of 10,000 rows). Of what remains at a million entries, the largest part is the local backend's own: it lists a directory by reading all its names and sorting them (internal/objstore/local/list.go, tens of MB at a million entries), where object stores page their listings."

// memRawPath keeps the last memory-only run's measurements.
const memRawPath = ".bench/last-memory-run.json"

// writeMemoryOnly saves a memory-only run and splices its section into
// the results file.
func writeMemoryOnly(c config, rep *report) error {
	p := filepath.Join(c.Repo, memRawPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		return err
	}
	out := resultsPath(c.Repo, c.Out)
	old, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(out, []byte(memoryMarks.splice(string(old), rep.memorySection())), 0o644)
}

// maxLive is the largest live heap of the runs.
func (s *series) maxLive() int64 {
	var m int64
	for _, x := range s.Samples {
		m = max(m, x.MaxLive)
	}
	return m
}

// renderMemory rewrites the memory section from a memory-only run's raw
// results, against the memory limit shipped now. The benchmark applies no
// memory limit (no cgroup), only GOMEMLIMIT, so a new limit needs no new
// measurement; a new GOMEMLIMIT does.
func renderMemory(c config, rep *report) error {
	now, err := shippedLimits(c.Repo)
	if err != nil {
		return err
	}
	if now.GoMemLimit != rep.MemLimits.GoMemLimit {
		return fmt.Errorf("%s was measured with GOMEMLIMIT=%s, %s ships %s: measure again (go run ./bench --only memory)",
			c.Render, rep.MemLimits.GoMemLimit, cronJobFile, now.GoMemLimit)
	}
	rep.MemLimits = now
	c.Out = rep.Config.Out
	if err := writeMemoryOnly(c, rep); err != nil {
		return err
	}
	logf("rendered the memory section of %s from %s", resultsPath(c.Repo, c.Out), c.Render)
	fmt.Print(rep.summary())
	return nil
}
