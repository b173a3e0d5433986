package chaos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// The retention record suite: `reaper retain` (the binary) SIGKILLed with
// its record <name>.reaper-retain left beside a table the real LanceDB
// client wrote, then run again as an operator would (docs/RETENTION.md, "An
// interrupted run"), on a local disk, S3 (versitygw), Azure (Azurite) and
// s3+ddb (versitygw and dynalite). Each seeded round writes two tables
// with the client (appends, deletes, updates, merge-inserts, compactions,
// scalar indices), waits until the store's clock is past their newest
// version, and runs `reaper retain --before <then> --keep-versions 1` on
// each (every version but the newest goes), killed at one of three points:
//
//   - record: right after its record is written, nothing deleted (on a
//     server the record's PUT landed and the process was killed before it
//     heard the answer; on a local disk the test holds a flock on the
//     table's _versions/, and the run is killed once it waits for it, at its
//     first manifest delete);
//   - manifests: killed at its manifest delete batch likewise, then the
//     oldest k of the manifests its record names (1 <= k < all) are deleted,
//     oldest first, as a run killed inside that batch leaves them (the
//     order of docs/RETENTION.md). On S3 and Azure the batch is one request,
//     which a server that dies mid-batch leaves partly applied; on a local
//     disk the run unlinks key by key. The test deletes them, so that the
//     state is exact;
//   - files: every manifest deleted by the run itself, killed at its first
//     batch of other files (on a local disk: once it waits for a flock the
//     test holds on _transactions/; on a server: at its first delete
//     request that names no manifest, which lands or not, drawn).
//
// Then, the killed run's lease up for takeover by the store's clock:
//
//  1. another policy (table "rerun"): `reaper retain` with a policy that
//     keeps more, drawn: --older-than 1h (keeps every version),
//     --keep-versions more than the table lists (likewise), or
//     --keep-versions K, 2 <= K below that, at the same cutoff. The versions
//     LanceDB lists after it must be exactly those the second policy keeps
//     of the ones it listed before it (every one, or the newest K): the run
//     removed nothing the record named that its own policy keeps.
//  2. a re-created table (table "recreate"): LanceDB drops the table and
//     creates it again under the same name with other rows and a history
//     of its own, so its manifest keys repeat the old table's; then
//     `reaper retain --older-than 1h`. Every object of the new table must
//     be as it was before the run (key and bytes), on s3+ddb every commit
//     row too, and it must list the same versions.
//
// After each: LanceDB opens every version it lists and reads the rows, by
// count and digest, it read when it made the version; every file a listed
// version references is there (on s3+ddb its commit row too); no file is
// left that no listed version references (a leak: the files of the
// versions the killed run had already removed must be gone); the table's
// record and lease are gone; the second run reported the record
// (finished). Before the first run the same leak check must find nothing,
// so whatever it finds later is reaper's. The scenarios' checks report and
// go on (assert), so a round shows each scenario's failures.
//
// A round where the kill point is not reached, or leaves no record, fails:
// the points are reached by construction (a flock, a request), not by
// timing. The record and manifests points leave versions the record names
// still listed: the rounds that would lose them under the old rule, which
// finished a record blindly (the test fails on that rule: docs/RETENTION.md,
// "How it is proven").
//
// Knobs: REAPER_TEST_CHAOS_RECORD_ROUNDS (rounds per backend; 3 on a local
// disk and 2 on each server in make test, 30 in the soak),
// REAPER_TEST_CHAOS_SEED. Rounds take the points in turn from a seeded
// start, the second table one point ahead of the first, so any two rounds
// kill each table at two different points.

// TestRetentionRecordLocal runs the suite on a local root (400ms leases).
func TestRetentionRecordLocal(t *testing.T) {
	t.Parallel()
	runRecordSuite(t, recordConfig{rounds: 3, leaseTTL: retainLeaseTTL, newRoot: func(t *testing.T) *backend { return localBackend(t) }})
}

// TestRetentionRecordS3 runs the suite on S3 (versitygw; 2s leases: S3
// stamps LastModified to the second, s3LeaseTTL).
func TestRetentionRecordS3(t *testing.T) {
	t.Parallel()
	runRecordSuite(t, recordConfig{rounds: 2, leaseTTL: s3LeaseTTL, newRoot: func(t *testing.T) *backend { return s3Backend(t, "db") }})
}

// TestRetentionRecordAzure runs the suite on Azure Blob Storage (Azurite).
func TestRetentionRecordAzure(t *testing.T) {
	t.Parallel()
	runRecordSuite(t, recordConfig{rounds: 2, leaseTTL: remoteLeaseTTL, newRoot: func(t *testing.T) *backend { return azureBackend(t, "db") }})
}

// TestRetentionRecordS3DDB runs the suite on an s3+ddb:// root: the client
// commits through DynamoDB (dynalite), its drop deletes the table's rows,
// and reaper deletes the rows of the versions it removes.
func TestRetentionRecordS3DDB(t *testing.T) {
	t.Parallel()
	runRecordSuite(t, recordConfig{rounds: 2, leaseTTL: s3LeaseTTL, newRoot: func(t *testing.T) *backend { return s3ddbBackend(t, "db") }})
}

type recordConfig struct {
	rounds   int
	leaseTTL time.Duration
	newRoot  func(t *testing.T) *backend
}

// The kill points of the first run.
const (
	pointRecord    = "record"
	pointManifests = "manifests"
	pointFiles     = "files"
)

var recordPoints = []string{pointRecord, pointManifests, pointFiles}

type recordSuite struct {
	t    *testing.T
	cfg  recordConfig
	seed uint64
	rng  *rand.Rand
	b    *backend
	w    *lanceWriter
	// px is the proxy the killed runs reach a server through (nil on a
	// local root).
	px *proxy
	// start is the seeded first point of the rotation.
	start int
}

func runRecordSuite(t *testing.T, cfg recordConfig) {
	requireLanceDB(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_RECORD_ROUNDS", cfg.rounds, 30)
	seed := baseSeed(t)
	b := cfg.newRoot(t)
	s := &recordSuite{t: t, cfg: cfg, seed: seed, rng: newRand(seed), b: b, w: startLanceWriterWith(t, b.uri, b.opts)}
	if b.dir == "" {
		s.px = b.proxy(t, seed)
	}
	s.start = s.rng.IntN(len(recordPoints))
	begin := time.Now()
	for r := range rounds {
		s.round(r)
		if t.Failed() {
			return
		}
	}
	t.Logf("%s, seed %d: %d rounds in %s", b.name, seed, rounds, time.Since(begin).Round(time.Millisecond))
}

// round runs both scenarios on two new tables.
func (s *recordSuite) round(r int) {
	t := s.t
	rerun := &chaosTable{name: fmt.Sprintf("rerun%02d", r), records: map[uint64]versionRecord{}}
	recreate := &chaosTable{name: fmt.Sprintf("recreate%02d", r), records: map[uint64]versionRecord{}}
	where := fmt.Sprintf("%s, seed %d, round %d", s.b.name, s.seed, r)
	s.writeHistory(where, rerun, recreate)
	cutoff := s.cutoffAfter(where, rerun, recreate)
	before := cutoff.UTC().Format(time.RFC3339Nano)

	// The first runs, each killed at its point.
	pa := recordPoints[(s.start+r)%len(recordPoints)]
	pb := recordPoints[(s.start+r+1)%len(recordPoints)]
	s.killFirst(rerun, pa, where+", "+rerun.name, "--before", before, "--keep-versions", "1")
	s.killFirst(recreate, pb, where+", "+recreate.name, "--before", before, "--keep-versions", "1")

	// The second table is dropped and created again by LanceDB.
	wb := where + ", " + recreate.name + " (re-created)"
	require.NoError(t, s.w.drop([]string{recreate.name}), wb)
	recreate.records, recreate.latest = map[uint64]versionRecord{}, 0
	s.writeHistory(wb, recreate)

	listedA := s.verify(where+", "+rerun.name+", after the kill", rerun)
	listedB := s.verify(wb, recreate)
	snapB := takeStore(t, s.b.raw, lifecycle.TableDir(recreate.name), "")
	require.NotEmpty(t, snapB)
	rowsB := s.commitRows(recreate.name)

	// 1. Another policy.
	args, keep := s.drawPolicy(listedA, before)
	wa := fmt.Sprintf("%s, %s, second policy %s", where, rerun.name, strings.Join(args, " "))
	removed := s.secondRun(rerun, wa, args...)
	want := listedA[len(listedA)-min(keep, len(listedA)):]
	assert.Equal(t, want, s.verify(wa, rerun), "%s: the versions listed after the second run are not the ones its policy keeps of %v", wa, listedA)
	if keep >= len(listedA) {
		assert.Zero(t, removed, "%s: a policy that keeps every version removed some", wa)
	}
	s.checkClean(wa, rerun)

	// 2. The re-created table. A failure above is reported (assert), and
	// this one is checked all the same.
	wb += ", --older-than 1h"
	assert.Zero(t, s.secondRun(recreate, wb, "--older-than", "1h"), "%s: removed versions", wb)
	assert.Equal(t, listedB, s.verify(wb, recreate), "%s: the new table's versions", wb)
	assert.Equal(t, snapB, takeStore(t, s.b.raw, lifecycle.TableDir(recreate.name), ""), "%s: the new table's objects changed", wb)
	assert.Equal(t, rowsB, s.commitRows(recreate.name), "%s: the new table's commit rows changed", wb)
	s.checkClean(wb, recreate)
}

// writeHistory creates the tables with LanceDB and writes a seeded history
// of 6 to 9 operations on each: every table lists at least 4 versions, and
// no file is left that no version references.
func (s *recordSuite) writeHistory(where string, tbs ...*chaosTable) {
	t := s.t
	var creates, writes []writeSpec
	for _, tb := range tbs {
		tb.next = 50 + s.rng.IntN(200)
		creates = append(creates, writeSpec{Name: tb.name, Kind: "plain", Rows: tb.next})
		writes = append(writes, writeSpec{Name: tb.name, Kind: "plain", Ops: s.historyOps(tb)})
	}
	for _, step := range []struct {
		cmd   string
		specs []writeSpec
	}{{"create", creates}, {"write", writes}} {
		res, err := s.w.write(step.cmd, step.specs)
		require.NoError(t, err, where)
		require.Len(t, res, len(tbs), where)
		for i, r := range res {
			tb := tbs[i]
			require.Equal(t, tb.name, r.Name)
			for j, op := range r.Ops {
				require.Empty(t, op.Error, "%s: %s op %d (%s) failed", where, tb.name, j, op.Op)
			}
			for _, v := range r.Versions {
				tb.records[v.Version] = v
				tb.latest = max(tb.latest, v.Version)
			}
		}
	}
	for _, tb := range tbs {
		tbl := s.read(tb.name)
		require.GreaterOrEqual(t, len(tbl.Versions), 4, "%s: %s", where, tb.name)
		require.Empty(t, unreferenced(tbl), "%s: %s: the client left files no version references before reaper ran", where, tb.name)
	}
}

// historyOps draws a table's writes: always an append, a delete and a
// compaction (which leave files only old versions reference), then more.
func (s *recordSuite) historyOps(tb *chaosTable) []writerOp {
	add := func() writerOp {
		lo := tb.next
		tb.next += 1 + s.rng.IntN(60)
		return writerOp{Op: "add", From: lo, To: tb.next}
	}
	ops := []writerOp{add(), {Op: "delete", Where: fmt.Sprintf("id %% 7 = %d", s.rng.IntN(7))}}
	for range 3 + s.rng.IntN(4) {
		switch w := s.rng.IntN(100); {
		case w < 35:
			ops = append(ops, add())
		case w < 50:
			ops = append(ops, writerOp{Op: "update", Where: fmt.Sprintf("id %% %d = 0", 2+s.rng.IntN(5)), Value: fmt.Sprintf("u%d", s.rng.IntN(1000))})
		case w < 65:
			lo := s.rng.IntN(tb.next)
			hi := tb.next + 1 + s.rng.IntN(30)
			tb.next = hi
			ops = append(ops, writerOp{Op: "merge", From: lo, To: hi})
		case w < 80:
			ops = append(ops, writerOp{Op: "delete", Where: fmt.Sprintf("id %% %d = %d", 5+s.rng.IntN(6), s.rng.IntN(5))})
		case w < 90:
			ops = append(ops, writerOp{Op: "index", Column: "id", Type: "btree"})
		default:
			ops = append(ops, writerOp{Op: "index", Column: "category", Type: "bitmap"})
		}
	}
	return append(ops, writerOp{Op: "compact"}, add())
}

// cutoffAfter waits until the store's clock is past every version of the
// tables (its manifest's timestamp and its LastModified) and returns the
// store's clock then: a --before that removes every version but the
// newest.
func (s *recordSuite) cutoffAfter(where string, tbs ...*chaosTable) time.Time {
	var at time.Time
	for _, tb := range tbs {
		for _, v := range s.read(tb.name).Versions {
			at = latest(at, v.Timestamp, v.LastModified)
		}
	}
	s.b.waitStore(s.t, at.Add(time.Millisecond), where+": wait until the store's clock is past the newest version")
	return s.b.storeNow(s.t)
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func (s *recordSuite) read(name string) *lance.Table {
	tbl, err := lance.ReadTable(context.Background(), s.b.raw, lifecycle.TableDir(name))
	require.NoError(s.t, err, "read %s", name)
	return tbl
}

// retainArgs are a run's command line on table name; endpoint, when not
// empty, is the proxy in front of the server.
func (s *recordSuite) retainArgs(endpoint, name string, policy ...string) []string {
	args := append([]string{"retain"}, s.b.rootArgs(endpoint)...)
	args = append(args, "-o", "json", "--log-format", "text", "--log-level", "info",
		"--allow-short-ttl", "--skew-allowance", shortSkew.String())
	return append(append(args, policy...), name)
}

func (s *recordSuite) env() []string {
	return []string{"REAPER_DEFAULTS_LEASE_TTL=" + s.cfg.leaseTTL.String()}
}

// killFirst runs `reaper retain` with policy on tb and kills it at point;
// the run must have left its record, and at the record and manifests
// points versions it names must still be listed.
func (s *recordSuite) killFirst(tb *chaosTable, point, where string, policy ...string) {
	t := s.t
	where += ", first run killed at " + point
	var r result
	if s.b.dir != "" {
		r = s.killLocal(tb.name, point, where, policy)
	} else {
		r = s.killRemote(tb.name, point, where, policy)
	}
	require.True(t, r.killed, "%s: the run ended before its kill point:\n%s", where, r)
	manifests := s.recordManifests(tb.name, where)
	require.GreaterOrEqual(t, len(manifests), 3, "%s: the record names too few manifests to test with", where)
	if point == pointManifests {
		k := 1 + s.rng.IntN(len(manifests)-1)
		ctx := context.Background()
		for _, key := range manifests[:k] {
			require.NoError(t, s.b.raw.Delete(ctx, lifecycle.TableDir(tb.name)+key), where)
		}
		where += fmt.Sprintf(" (%d of its %d manifests deleted)", k, len(manifests))
	}
	listed := map[string]bool{}
	for _, v := range s.read(tb.name).Versions {
		listed[v.Key] = true
	}
	still := 0
	for _, m := range manifests {
		if listed[m] {
			still++
		}
	}
	if point != pointFiles {
		require.Positive(t, still, "%s: no version the record names is still listed", where)
	} else {
		require.Zero(t, still, "%s: the run reached its files before deleting every manifest", where)
	}
	t.Logf("%s: its record names %d versions, %d of them still listed", where, len(manifests), still)
}

// killLocal holds a flock on the table's _versions/ (record, manifests) or
// _transactions/ (files) and kills the run once it waits for that lock: at
// its first delete in that directory.
func (s *recordSuite) killLocal(name, point, where string, policy []string) result {
	t := s.t
	sub := strings.TrimSuffix(lance.VersionsDir, "/")
	if point == pointFiles {
		sub = strings.TrimSuffix(lance.TransactionsDir, "/")
	}
	dir := filepath.Join(s.b.dir, filepath.FromSlash(lifecycle.TableDir(name)), sub)
	gate, err := os.Open(dir)
	require.NoError(t, err, where)
	defer gate.Close() // drops the flock
	require.NoError(t, unix.Flock(int(gate.Fd()), unix.LOCK_EX), where)
	p := startReaper(t, s.retainArgs("", name, policy...), s.env(), nil)
	for !p.finished() {
		if flockWaiter(t, p.pid()) {
			p.kill()
			break
		}
		select {
		case <-p.done:
		case <-time.After(2 * time.Millisecond): // poll /proc/locks
		}
	}
	return p.wait(t)
}

// killRemote runs through the proxy and kills the run at the request its
// point picks: the record's PUT (it lands), the first delete request that
// names manifests (not forwarded) or the first that names none (the
// files: it lands or not, drawn). Every request after it is dropped.
func (s *recordSuite) killRemote(name, point, where string, policy []string) result {
	t := s.t
	landFiles := s.rng.IntN(2) == 0
	pick := func(r *http.Request) (hit, landed bool) {
		switch {
		case point == pointRecord:
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+lifecycle.RetainKey(name)), true
		case !isDeleteRequest(r, name):
			return false, false
		case point == pointManifests:
			return deletesManifests(r), false
		default:
			return !deletesManifests(r), landFiles
		}
	}
	var kill atomic.Pointer[func()]
	var fired atomic.Bool
	killNow := func() {
		if k := kill.Load(); k != nil {
			(*k)()
		}
	}
	s.px.setHook(func(_ int64, r *http.Request) (hookAction, func()) {
		if fired.Load() {
			killNow()
			return hookDrop, nil
		}
		hit, landed := pick(r)
		switch {
		case !hit:
			return hookPass, nil
		case !fired.CompareAndSwap(false, true):
			return hookDrop, nil
		case landed:
			return hookForward, killNow
		}
		return hookDrop, killNow
	})
	r := startReaper(t, s.retainArgs(s.px.URL(), name, policy...), s.env(), &killer{start: func(k func()) { kill.Store(&k) }}).wait(t)
	s.px.setHook(nil)
	s.px.settle(t)
	require.True(t, fired.Load(), "%s: the kill point was never reached:\n%s", where, r)
	if point == pointFiles {
		t.Logf("%s: the files batch %s", where, map[bool]string{true: "landed", false: "was dropped"}[landFiles])
	}
	return r
}

// isDeleteRequest: a delete of keys of table name: an S3 DeleteObjects, an
// Azure Blob Batch, or a single DELETE of a key under the table.
func isDeleteRequest(r *http.Request, name string) bool {
	switch {
	case isDeleteObjects(r):
		return true
	case r.Method == http.MethodPost && r.URL.Query().Get("comp") == "batch":
		return true
	}
	return r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/"+lifecycle.TableDir(name))
}

// deletesManifests: a delete request names manifests (keys under
// _versions/): in its path, or in its body (an S3 DeleteObjects' XML, an
// Azure Blob Batch's sub-requests). The body is read and put back for the
// proxy to forward.
func deletesManifests(r *http.Request) bool {
	if r.Method == http.MethodDelete {
		return strings.Contains(r.URL.Path, "/"+lance.VersionsDir)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(fmt.Sprintf("the proxy's request body: %v", err)) // a bytes.Reader
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Azure escapes the slashes of a blob name in a sub-request's path.
	escaped := "%2F" + strings.ReplaceAll(lance.VersionsDir, "/", "%2F")
	return bytes.Contains(body, []byte("/"+lance.VersionsDir)) || bytes.Contains(body, []byte(escaped))
}

// recordManifests reads table name's record (it must be there) and returns
// the manifests it names, keys relative to the table, oldest version
// first. It reads the keys of "files", which both record formats have.
func (s *recordSuite) recordManifests(name, where string) []string {
	t := s.t
	body, _, err := s.b.raw.Get(context.Background(), lifecycle.RetainKey(name), lifecycle.MaxRetainRecordBytes)
	require.NoError(t, err, "%s: the killed run left no record", where)
	var rec struct {
		Files []struct {
			Key string `json:"key"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal(body, &rec), "%s: the record", where)
	type manifest struct {
		key string
		v   uint64
	}
	var ms []manifest
	for _, f := range rec.Files {
		if rest, ok := strings.CutPrefix(f.Key, lance.VersionsDir); ok {
			if v, ok := lance.ManifestVersion(rest); ok {
				ms = append(ms, manifest{f.Key, v})
			}
		}
	}
	slices.SortFunc(ms, func(a, b manifest) int { return cmp.Compare(a.v, b.v) })
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.key
	}
	return out
}

// verify has LanceDB open every version it lists of tb and read it
// (checkVersions) and returns their numbers.
func (s *recordSuite) verify(where string, tb *chaosTable) []uint64 {
	vts, err := s.w.verify(s.b.uri, []string{tb.name})
	require.NoError(s.t, err, where)
	require.Len(s.t, vts, 1, where)
	checkVersions(s.t, tb, vts[0], where)
	out := make([]uint64, len(vts[0].Versions))
	for i, v := range vts[0].Versions {
		out[i] = v.Version
	}
	return out
}

// drawPolicy draws the second policy of the rerun table, which lists
// versions listed: one that keeps them all (--older-than 1h, or
// --keep-versions more than listed at the first run's cutoff) or the newest
// K (2 <= K < listed) at that cutoff. It returns the flags and how many of
// the newest versions the policy keeps.
func (s *recordSuite) drawPolicy(listed []uint64, before string) ([]string, int) {
	n := len(listed)
	switch c := s.rng.IntN(3); {
	case c == 0:
		return []string{"--older-than", "1h"}, n
	case c == 1 || n <= 2:
		keep := n + 1 + s.rng.IntN(4)
		return []string{"--before", before, "--keep-versions", fmt.Sprint(keep)}, keep
	default:
		keep := 2 + s.rng.IntN(n-2)
		return []string{"--before", before, "--keep-versions", fmt.Sprint(keep)}, keep
	}
}

// secondRun runs `reaper retain` with policy on tb once the store's clock
// allows the killed run's lease to be taken over, and again while a run
// loses its lease (a starved process on a loaded machine stops, as it
// must; the next one takes over its record). The first run must report
// the record it found (finished); it returns the versions the runs
// reported removed.
func (s *recordSuite) secondRun(tb *chaosTable, where string, policy ...string) int {
	t := s.t
	removed := 0
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 5, "%s: every run lost its lease", where)
		waitTakeover(t, s.b, shortSkew, where+": wait for the killed run's lease's takeover time")
		r := reaperWithEnv(t, s.retainArgs("", tb.name, policy...), s.env(), nil)
		rep := parseRetain(t, r)
		require.Len(t, rep.Tables, 1, "%s\n%s", where, r)
		row := rep.Tables[0]
		removed += row.VersionsDeleted
		if attempt == 0 {
			assert.True(t, row.Finished, "%s: the run did not report the killed run's record\n%s", where, r)
		}
		if row.Result == "failed" && strings.Contains(row.Reason, "lease lost") || row.Result == "locked" {
			t.Logf("%s: the run reported %s (%s); running again", where, row.Result, row.Reason)
			continue
		}
		require.Contains(t, []string{"cleaned", "nothing_to_do"}, row.Result, "%s: %s\n%s", where, row.Reason, r)
		require.Equal(t, 0, r.code, "%s: exit status\n%s", where, r)
		t.Logf("%s: %s, %d versions and %d objects deleted", where, row.Result, removed, row.Objects)
		return removed
	}
}

// checkClean: after a second run, every file a version of tb references is
// there, none is left that no version references, and no record or lease
// is left.
func (s *recordSuite) checkClean(where string, tb *chaosTable) {
	t := s.t
	tbl := s.read(tb.name)
	assert.Empty(t, missingRefs(tbl), "%s: files listed versions reference are gone", where)
	if rows := s.commitRows(tb.name); rows != nil {
		var missing, stale []uint64
		listed := map[uint64]bool{}
		for _, v := range tbl.Versions {
			listed[v.Number] = true
			if _, ok := rows[v.Number]; !ok {
				missing = append(missing, v.Number)
			}
		}
		for v := range rows {
			if !listed[v] {
				stale = append(stale, v)
			}
		}
		slices.Sort(stale)
		assert.Empty(t, missing, "%s: listed versions lost their commit rows", where)
		if len(stale) > 0 {
			// A run that removes no version sweeps no row (docs/BACKENDS.md,
			// s3+ddb): the rows of the versions the killed run removed stay
			// until a run removes a version.
			t.Logf("%s: commit rows of versions no longer listed are left: %v", where, stale)
		}
	}
	assert.Empty(t, unreferenced(tbl), "%s: leaked: files no listed version references", where)
	_, err := s.b.raw.Head(context.Background(), lifecycle.RetainKey(tb.name))
	assert.True(t, errors.Is(err, objstore.ErrNotFound), "%s: the record is left after the second run (%v)", where, err)
	_, held := leases(t, s.b)[lifecycle.LockKey(tb.name)]
	assert.False(t, held, "%s: the table's lease is left", where)
}

// commitRows are table name's rows in the root's external commit store
// (s3+ddb: DynamoDB), version to manifest path; nil on other roots.
func (s *recordSuite) commitRows(name string) map[uint64]string {
	rows := objstore.CommitRowsOf(s.b.raw)
	if rows == nil {
		return nil
	}
	out := map[uint64]string{}
	require.NoError(s.t, rows.TableRows(context.Background(), strings.TrimSuffix(lifecycle.TableDir(name), "/"), func(page []objstore.CommitRow) error {
		for _, r := range page {
			out[r.Version] = r.Path
		}
		return nil
	}), "read the commit rows of %s", name)
	return out
}

// missingRefs are the files versions of tbl (main and detached) reference
// that are not there: a manifest, a data, deletion or transaction file, or
// an index directory with no file.
func missingRefs(tbl *lance.Table) []string {
	have, indices := map[string]bool{}, map[string]bool{}
	for _, o := range tbl.Objects {
		have[o.Key] = true
		if rest, ok := strings.CutPrefix(o.Key, lance.IndicesDir); ok {
			uuid, _, _ := strings.Cut(rest, "/")
			indices[uuid] = true
		}
	}
	var out []string
	for _, v := range slices.Concat(tbl.Versions, tbl.Detached) {
		keys, ixs := v.Refs()
		for _, k := range append(keys, v.Key) {
			if !have[k] {
				out = append(out, fmt.Sprintf("%s (version %d)", k, v.Number))
			}
		}
		for _, ix := range ixs {
			if !indices[ix] {
				out = append(out, fmt.Sprintf("%s%s/ (version %d)", lance.IndicesDir, ix, v.Number))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
