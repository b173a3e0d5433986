package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/stack"
)

// The retention oracle is Lance itself: seeded histories written by the
// LanceDB client, then, at several cutoffs and with deleteUnverified false
// and true, reaper's plan is computed on the table and the client's own
// cleanup (optimize({cleanupOlderThan, deleteUnverified})) is run on it:
// the files Lance deleted must be the plan's, file for file.
//
// Each step plans on the table as it is, then lets Lance clean it in
// place, so the next step starts from Lance's result. (Cleaning copies
// instead would not be faithful: a branch names its parent by its absolute
// location, and a copy's objects get new modification times, which
// Lance's cleanup compares with version timestamps.)
//
// A version that is tagged and older than the cutoff makes the client
// refuse ("tagged version(s) have been marked for cleanup"). There the plan
// must keep every tagged version and every file it references; the test
// then deletes the plan's files itself, and LanceDB must still open every
// version it lists with the rows it had. Every table ends with that check.

const (
	// EnvRetentionHistories overrides the number of histories on a local
	// root (a bigger run: REAPER_TEST_RETENTION_HISTORIES=1000).
	EnvRetentionHistories = "REAPER_TEST_RETENTION_HISTORIES"
	// EnvRetentionSeed overrides the seed of the histories.
	EnvRetentionSeed = "REAPER_TEST_RETENTION_SEED"

	defaultLocalHistories = 100
	defaultS3Histories    = 10
	defaultAzureHistories = 6
	defaultRetentionSeed  = 27
	// cutoffsPerTable is how many cutoffs each table is cleaned at.
	cutoffsPerTable = 3
	// minGap is the least gap between two versions a cutoff is placed in.
	minGap = 100 * time.Millisecond
)

func TestRetentionOracleLocal(t *testing.T) {
	t.Parallel()
	runRetentionOracle(t, newLocal(t), envInt(t, EnvRetentionHistories, defaultLocalHistories))
}

func TestRetentionOracleS3(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting the S3 server when LanceDB is missing
	runRetentionOracle(t, newS3(t), defaultS3Histories)
}

func TestRetentionOracleAzure(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting Azurite when LanceDB is missing
	runRetentionOracle(t, newAzure(t), defaultAzureHistories)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// oracleTable is one table's progress through the oracle.
type oracleTable struct {
	h       history
	built   builtTable
	cutoffs []time.Time
	// done: the client refused a cleanup (a tagged old version) and the
	// test applied reaper's plan instead; no further steps.
	done bool
}

func (o *oracleTable) dir() string { return o.h.Name + ".lance/" }

// oracleStats sum what the oracle compared, for the log.
type oracleStats struct {
	mu                                 sync.Mutex
	steps, files, versions, refusals   int
	byWhy                              map[string]int
	unverifiedSteps, unverifiedDeleted int
}

func runRetentionOracle(t *testing.T, b backend, n int) {
	node := requireNode(t)
	seed := uint64(envInt(t, EnvRetentionSeed, defaultRetentionSeed))
	t.Logf("retention oracle: %d histories, seed %d (%s=%d reproduces them)", n, seed, EnvRetentionSeed, seed)
	start := time.Now()
	d := startRetentionDriver(t, node, b)
	tables := make([]*oracleTable, n)
	hs := make([]history, n)
	for i := range tables {
		name := fmt.Sprintf("h%04d", i)
		dir := ""
		if lb, ok := b.(*localBackend); ok {
			dir = filepath.Join(lb.dir, name+".lance")
		}
		hs[i] = genHistory(seed*1_000_003+uint64(i), name, dir)
		tables[i] = &oracleTable{h: hs[i]}
	}
	t.Logf("retention oracle: operations drawn: %s", opCounts(hs))
	rng := rand.New(rand.NewPCG(seed, 0xc0ff))
	for i, bt := range d.build(t, hs) {
		require.Equal(t, tables[i].h.Name, bt.Name)
		tables[i].built = bt
		tables[i].cutoffs = pickCutoffs(rng, bt.Versions)
	}
	ctx := context.Background()
	store, err := stack.Open(ctx, b.uri(), b.lanceOptions(), stack.Options{})
	require.NoError(t, err)
	stats := &oracleStats{byWhy: map[string]int{}}
	// The command line is checked on the same tables: `reaper retain
	// --dry-run` must list the files of the plan, so what the CLI reports
	// is, through the plan, what Lance deletes.
	c := &cli{bin: reaperBin(t), b: b}
	for step := range cutoffsPerTable {
		for _, du := range []bool{false, true} {
			oracleStep(t, ctx, store, d, tables, step, du, stats, c)
		}
	}
	verifyAllVersions(t, d, tables)
	t.Logf("retention oracle: %d histories in %v: %d cleanup steps compared, %d versions and %d files removed equal to Lance's (%v), %d steps with deleteUnverified deleted %d unverified files, %d refusals for tagged versions checked",
		n, time.Since(start).Round(time.Millisecond), stats.steps, stats.versions, stats.files, stats.byWhy, stats.unverifiedSteps, stats.unverifiedDeleted, stats.refusals)
}

// opCounts counts the operations of the histories by kind, for the log.
func opCounts(hs []history) string {
	counts := map[string]int{}
	for _, h := range hs {
		for _, op := range h.Ops {
			k := op.Op
			if op.Op == "orphan" || op.Op == "index" {
				k += "/" + op.What + op.Type
			}
			counts[k]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d, ", k, counts[k])
	}
	return strings.TrimSuffix(b.String(), ", ")
}

// pickCutoffs places up to cutoffsPerTable cutoffs mid-gap between versions
// at least minGap apart (and after the newest one), ascending.
func pickCutoffs(rng *rand.Rand, vs []builtVersion) []time.Time {
	var gaps []time.Time
	for i := range vs {
		lo := vs[i].TimestampMs
		hi := lo + 2*minGap.Milliseconds() // after the newest: now is later still
		if i+1 < len(vs) {
			hi = vs[i+1].TimestampMs
		}
		if hi-lo >= minGap.Milliseconds() {
			gaps = append(gaps, time.UnixMilli((lo+hi)/2))
		}
	}
	rng.Shuffle(len(gaps), func(i, j int) { gaps[i], gaps[j] = gaps[j], gaps[i] })
	gaps = gaps[:min(len(gaps), cutoffsPerTable)]
	slices.SortFunc(gaps, func(a, b time.Time) int { return a.Compare(b) })
	return gaps
}

// oracleStep plans every table still in play at its step-th cutoff, lets
// the client clean them, and compares.
func oracleStep(t *testing.T, ctx context.Context, store objstore.Store, d *retentionDriver, tables []*oracleTable, step int, du bool, stats *oracleStats, c *cli) {
	var active []*oracleTable
	for _, o := range tables {
		if !o.done && step < len(o.cutoffs) {
			active = append(active, o)
		}
	}
	if len(active) == 0 {
		return
	}
	plans := make([]retention.Plan, len(active))
	reads := make([]*lance.Table, len(active))
	before := make([]map[string]objstore.Object, len(active))
	now, err := store.Now(ctx)
	require.NoError(t, err)
	require.NoError(t, parallel(len(active), func(i int) error {
		o := active[i]
		tb, err := lance.ReadTable(ctx, store, o.dir())
		if err != nil {
			return fmt.Errorf("read %s: the reader must handle every table the client writes: %w", o.dir(), err)
		}
		reads[i] = tb
		if plans[i], err = retention.Compute(tb, retention.Policy{Before: o.cutoffs[step], DeleteUnverified: du}, now); err != nil {
			return err
		}
		before[i], err = listTable(ctx, store, o.dir())
		return err
	}))
	checkRetainCLI(t, c, active, plans, step, du)
	specs := make([]cleanupSpec, len(active))
	for i, o := range active {
		specs[i] = cleanupSpec{Name: o.h.Name, CutoffMs: o.cutoffs[step].UnixMilli(), DeleteUnverified: du}
	}
	results := d.cleanup(t, specs)
	for i, o := range active {
		after, err := listTable(ctx, store, o.dir())
		require.NoError(t, err)
		label := fmt.Sprintf("%s cutoff %d (%s) deleteUnverified=%v", o.h.Name, step, o.cutoffs[step].Format(time.RFC3339Nano), du)
		if results[i].Refused != "" {
			checkRefusal(t, ctx, store, o, reads[i], plans[i], before[i], after, results[i], label)
			stats.add(func() { stats.refusals++ })
			continue
		}
		compareWithLance(t, reads[i], plans[i], before[i], after, results[i], label)
		stats.add(func() {
			stats.steps++
			stats.files += len(plans[i].Files)
			stats.versions += len(plans[i].Removed)
			for _, f := range plans[i].Files {
				stats.byWhy[strings.Fields(f.Why)[0]]++
				if du && !f.Verified {
					stats.unverifiedDeleted++
				}
			}
			if du {
				stats.unverifiedSteps++
			}
		})
	}
}

// checkRetainCLI runs `reaper retain --dry-run -o json` on the active
// tables at their step-th cutoff (grouped by cutoff: one run each) and
// requires each table's files to be its plan's.
func checkRetainCLI(t *testing.T, c *cli, active []*oracleTable, plans []retention.Plan, step int, du bool) {
	t.Helper()
	byCutoff := map[time.Time][]int{}
	for i, o := range active {
		byCutoff[o.cutoffs[step]] = append(byCutoff[o.cutoffs[step]], i)
	}
	for cutoff, idx := range byCutoff {
		args := []string{"--dry-run", "-o", "json", "--allow-short-ttl", "--before", cutoff.UTC().Format(time.RFC3339Nano)}
		if du {
			args = append(args, "--delete-unverified")
		}
		for _, i := range idx {
			args = append(args, active[i].h.Name)
		}
		out, code := c.run(t, "retain", args...)
		require.Equal(t, 0, code, "reaper retain %v", args)
		var rep struct {
			Tables []struct {
				Name   string `json:"name"`
				Result string `json:"result"`
				Files  []struct {
					Key string `json:"key"`
				} `json:"files"`
			} `json:"tables"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		got := map[string][]string{}
		for _, tb := range rep.Tables {
			require.Contains(t, []string{"planned", "nothing_to_do"}, tb.Result, tb.Name)
			keys := []string{}
			for _, f := range tb.Files {
				keys = append(keys, f.Key)
			}
			got[tb.Name] = keys
		}
		for _, i := range idx {
			want := []string{}
			for _, f := range plans[i].Files {
				want = append(want, active[i].dir()+f.Key)
			}
			sort.Strings(want)
			require.Equal(t, want, got[active[i].h.Name], "reaper retain's files of %s at cutoff %s", active[i].h.Name, cutoff)
		}
	}
}

func (s *oracleStats) add(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

// compareWithLance fails naming every file one side deleted and the other
// kept.
func compareWithLance(t *testing.T, tb *lance.Table, plan retention.Plan, before, after map[string]objstore.Object, res cleanupResult, label string) {
	t.Helper()
	var diffs []string
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("the client's cleanup wrote %s", k))
		}
	}
	planned := map[string]retention.File{}
	for _, f := range plan.Files {
		planned[f.Key] = f
		if _, gone := after[f.Key]; gone {
			diffs = append(diffs, fmt.Sprintf("reaper plans to delete %s (%s), Lance kept it", f.Key, f.Why))
		}
	}
	for k := range before {
		if _, kept := after[k]; !kept {
			if _, ok := planned[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("Lance deleted %s, reaper's plan keeps it (%s)", k, referencedBy(tb, k)))
			}
		}
	}
	if want := res.VersionsBefore - len(plan.Removed); res.VersionsAfter != want {
		diffs = append(diffs, fmt.Sprintf("Lance left %d of %d versions, reaper's plan leaves %d (removes %v)", res.VersionsAfter, res.VersionsBefore, want, plan.Removed))
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s: reaper's plan differs from Lance's cleanup:\n  %s", label, strings.Join(diffs, "\n  "))
	}
}

// referencedBy names the versions whose manifests reference key, for a
// failure message.
func referencedBy(tb *lance.Table, key string) string {
	var out []string
	for _, v := range tb.Versions {
		keys, indices := v.Refs()
		if slices.Contains(keys, key) || slices.ContainsFunc(indices, func(ix string) bool { return strings.HasPrefix(key, lance.IndicesDir+ix+"/") }) {
			out = append(out, fmt.Sprintf("v%d@%s", v.Number, v.Timestamp.Format(time.RFC3339Nano)))
		}
	}
	if len(out) == 0 {
		return "no version references it"
	}
	return "referenced by " + strings.Join(out, ", ")
}

// checkRefusal: the client refused because a tagged version is older than
// the cutoff. Lance changed nothing; reaper's plan keeps every tagged
// version of main and every file it references. The test then applies the
// plan; the final check opens every version.
func checkRefusal(t *testing.T, ctx context.Context, store objstore.Store, o *oracleTable, tb *lance.Table, plan retention.Plan, before, after map[string]objstore.Object, res cleanupResult, label string) {
	t.Helper()
	require.Contains(t, res.Refused, "tagged", "%s: the client's cleanup failed for another reason", label)
	require.Equal(t, keysOf(before), keysOf(after), "%s: the client refused yet changed files", label)
	requireTaggedKept(t, tb, plan, label)
	var keys []string
	for _, f := range plan.Files {
		keys = append(keys, o.dir()+f.Key)
	}
	for batch := range slices.Chunk(keys, objstore.MaxBatchDelete) {
		require.NoError(t, store.DeleteBatch(ctx, batch))
	}
	o.done = true
}

// verifyAllVersions opens every version LanceDB lists in every table and
// counts its rows: each must equal what the version held when written.
func verifyAllVersions(t *testing.T, d *retentionDriver, tables []*oracleTable) {
	names := make([]string, len(tables))
	for i, o := range tables {
		names[i] = o.h.Name
	}
	for i, vt := range d.verify(t, names) {
		rows := map[uint64]int64{}
		for _, v := range tables[i].built.Versions {
			rows[v.Version] = v.Rows
		}
		for _, v := range vt.Versions {
			if v.Error != "" {
				t.Errorf("%s version %d does not open after the cleanups: %s", vt.Name, v.Version, v.Error)
				continue
			}
			if want, ok := rows[v.Version]; ok && v.Rows != want {
				t.Errorf("%s version %d reads %d rows, had %d", vt.Name, v.Version, v.Rows, want)
			}
		}
	}
}

// listTable lists every object of a table directory, keys relative to it.
func listTable(ctx context.Context, store objstore.Store, dir string) (map[string]objstore.Object, error) {
	out := map[string]objstore.Object{}
	err := store.Walk(ctx, dir, func(objs []objstore.Object) error {
		for _, o := range objs {
			out[strings.TrimPrefix(o.Key, dir)] = o
		}
		return nil
	})
	return out, err
}

func keysOf(m map[string]objstore.Object) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parallel runs fn(0..n-1), 8 at a time, and returns the first error.
func parallel(n int, fn func(i int) error) error {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				once.Do(func() { first = err })
			}
		})
	}
	wg.Wait()
	return first
}
