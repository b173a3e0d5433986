package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// TestRetentionChaosLocal runs `reaper retain` (the real binary, deleting)
// again and again on a local root while the real LanceDB client writes its
// tables: appends, deletes, updates, merge-inserts, compactions, scalar
// index builds and restores of recent versions. Each seeded round starts a
// batch of writes, and while it runs reaper either
//
//   - runs passes back to back until the batch ends (run),
//   - is SIGKILLed, one to three times, a seeded random time after a drawn
//     table's lease was taken or its retention record appeared
//     (retention_points_test.go), leaving leases, records and half-done
//     deletes for later passes (kill), or
//   - is SIGSTOPped likewise and kept stopped past its 400ms leases, until
//     the store's clock allows a takeover; a second pass takes the leases
//     over and finishes, the writer writing meanwhile; then the first is
//     resumed and runs to its end (stop).
//
// Every pass removes the versions written more than retainOlderThan ago by
// the store's clock, so the cutoff moves forward as the test runs. The
// writer restores only versions it made less than restoreMaxAge ago:
// younger than any pass's cutoff (restoring an older one races every
// cleanup by design, Lance's own too: docs/RETENTION.md).
//
// After every round (no reaper process running): every version LanceDB
// lists opens and reads the rows, by count and digest, it read when the
// writer made it; the newest version is listed. After the last round the
// writer compacts until nothing is left to compact and stops, passes run
// until no lease and no record is left, and then, per table, one pass with
// a cutoff placed mid-gap between two versions runs on the table while
// the client's own cleanup (optimize({cleanupOlderThan})) runs with the
// same cutoff on a copy made just before it with modification times kept
// (cp -a): the files left must be equal (retention_checks_test.go says why
// a copy is a valid oracle here). Finally no file is left that no version
// references (a leak: files of versions removed by killed runs that nobody
// deleted), no record and no lease.
//
// Knobs: REAPER_TEST_CHAOS_RETAIN_ROUNDS (rounds; 60, soak 500),
// REAPER_TEST_CHAOS_SEED (the seed, always logged). A replay draws the
// same operations, modes and kill delays; where a kill lands within the
// pass still depends on timing.
func TestRetentionChaosLocal(t *testing.T) {
	t.Parallel()
	requireLanceDB(t)
	rounds := knob(t, "REAPER_TEST_CHAOS_RETAIN_ROUNDS", 60, 500)
	rc := newRetainChaos(t, baseSeed(t))
	start := time.Now()
	for r := range rounds {
		rc.round(r)
	}
	// On a loaded machine the drawn points may all fire after the few
	// milliseconds a record lives: then kill right as a record appears,
	// a few times, so the suite still tests a killed record.
	for extra := 0; rounds >= 20 && extra < 10 && rc.st.killRecords.Load() == 0; extra++ {
		rc.recordKillRound(extra)
	}
	rc.finish()
	st := &rc.st
	t.Logf("retention chaos, seed %d: %d rounds in %s: %d passes (%d finished a killed run's record), %d killed (%d left a record, %d mid-delete), %d stopped past their leases (%d lost a lease, %d flock unblocks), %d leases lost by running passes (starved), %d finished before their kill or stop point; writer: %d versions, %d restores (%d skipped: none young enough), %d optimize races tolerated; %d versions removed, %d files deleted",
		rc.seed, rounds, time.Since(start).Round(time.Millisecond), st.passes.Load(), st.finishedRecords.Load(),
		st.kills.Load(), st.killRecords.Load(), st.killMidDelete.Load(), st.stops.Load(), st.lost.Load(), st.flockUnblocks.Load(), st.starved.Load(),
		st.finishedFirst.Load(), st.versions.Load(), st.restores.Load(), st.restoresSkipped.Load(), st.optimizeRaces.Load(),
		st.versionsRemoved.Load(), st.objects.Load())
	if t.Failed() {
		return
	}
	if rounds >= 20 {
		require.Positive(t, st.killRecords.Load(), "no kill landed between a record's write and its removal: the kill points test nothing")
		require.Positive(t, st.finishedRecords.Load(), "no pass finished a record a killed pass left")
		require.Positive(t, st.lost.Load(), "no stop caught a pass holding a table's lease: the stop points test nothing")
	}
}

const (
	// retainOlderThan is every pass's policy: versions written longer ago
	// than this by the store's clock are removed.
	retainOlderThan = 3 * time.Second
	// restoreMaxAge: the writer restores only versions it started making
	// at most this long ago, so a restore has retainOlderThan -
	// restoreMaxAge (2s) to commit before any pass may remove its source.
	restoreMaxAge = time.Second
	// retainLeaseTTL is the passes' lease (REAPER_DEFAULTS_LEASE_TTL): a
	// stopped or killed pass's lease is taken over 400ms + 1s + skew after
	// it was last written.
	retainLeaseTTL = 400 * time.Millisecond
	retainTables   = 3
)

// retainStats count what the rounds hit, so a run whose kills and stops
// never land inside a pass fails instead of testing nothing.
type retainStats struct {
	passes, finishedRecords, versionsRemoved, objects  atomic.Int64
	kills, killRecords, killMidDelete, finishedFirst   atomic.Int64
	stops, lost, flockUnblocks, starved                atomic.Int64
	versions, restores, restoresSkipped, optimizeRaces atomic.Int64
}

// chaosTable is one table the writer writes and what it recorded.
type chaosTable struct {
	name    string
	next    int // the next unused id
	records map[uint64]versionRecord
	latest  uint64
}

type retainChaos struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	b      *backend
	w      *lanceWriter
	tables []*chaosTable
	// seen has the references of every version a read of the tables
	// found, by table: the leak check's record of what removed versions
	// referenced.
	seen map[string]map[uint64]versionRefs
	// points times the passes' leases and records and fires kill and
	// stop points (retention_points_test.go).
	points *pointWatch
	// writeErrors: a write failed, so files no version references may be
	// the writer's, not leaks.
	writeErrors bool
	st          retainStats
}

func newRetainChaos(t *testing.T, seed uint64) *retainChaos {
	b := localBackend(t)
	rc := &retainChaos{t: t, seed: seed, rng: newRand(seed), b: b, w: startLanceWriter(t, b.uri),
		seen: map[string]map[uint64]versionRefs{}, points: newPointWatch()}
	watchRecords(t, b.dir, rc.points)
	var specs []writeSpec
	for i := range retainTables {
		tb := &chaosTable{name: fmt.Sprintf("t%d", i), next: 100 + rc.rng.IntN(200), records: map[uint64]versionRecord{}}
		rc.tables = append(rc.tables, tb)
		specs = append(specs, writeSpec{Name: tb.name, Kind: "plain", Rows: tb.next})
	}
	res, err := rc.w.write("create", specs)
	require.NoError(t, err)
	rc.recordWrites(res, "create")
	return rc
}

// retainArgs are one pass's command line: every live table of the root,
// JSON report, info logs (the kill and stop points are drawn from the
// "acquired" line of the first lease).
func (rc *retainChaos) retainArgs(extra ...string) []string {
	args := []string{"retain", "--root", rc.b.uri, "-o", "json", "--log-format", "text", "--log-level", "info",
		"--allow-short-ttl", "--skew-allowance", shortSkew.String()}
	if len(extra) == 0 {
		extra = []string{"--older-than", retainOlderThan.String()}
	}
	return append(args, extra...)
}

var retainEnv = []string{"REAPER_DEFAULTS_LEASE_TTL=" + retainLeaseTTL.String()}

// drawOps draws one table's batch of writes.
func (rc *retainChaos) drawOps(tb *chaosTable) []writerOp {
	var ops []writerOp
	for range 3 + rc.rng.IntN(6) {
		switch w := rc.rng.IntN(100); {
		case w < 25:
			lo := tb.next
			tb.next += 1 + rc.rng.IntN(80)
			ops = append(ops, writerOp{Op: "add", From: lo, To: tb.next})
		case w < 37:
			m := 3 + rc.rng.IntN(8)
			ops = append(ops, writerOp{Op: "delete", Where: fmt.Sprintf("id %% %d = %d", m, rc.rng.IntN(m))})
		case w < 47:
			ops = append(ops, writerOp{Op: "update", Where: fmt.Sprintf("id %% %d = 0", 2+rc.rng.IntN(6)), Value: fmt.Sprintf("u%d", rc.rng.IntN(1000))})
		case w < 55:
			lo := rc.rng.IntN(tb.next)
			hi := tb.next + 1 + rc.rng.IntN(30)
			tb.next = hi
			ops = append(ops, writerOp{Op: "merge", From: lo, To: hi})
		case w < 67:
			ops = append(ops, writerOp{Op: "compact"})
		case w < 77:
			if rc.rng.IntN(2) == 0 {
				ops = append(ops, writerOp{Op: "index", Column: "id", Type: "btree"})
			} else {
				ops = append(ops, writerOp{Op: "index", Column: "category", Type: "bitmap"})
			}
		default:
			ops = append(ops, writerOp{Op: "restore", Back: 1 + rc.rng.IntN(4), MaxAgeMs: restoreMaxAge.Milliseconds()})
		}
	}
	return ops
}

// startWrite sends a batch of writes for every table; the answer arrives
// on the channel.
func (rc *retainChaos) startWrite() <-chan writeAnswer {
	var specs []writeSpec
	for _, tb := range rc.tables {
		specs = append(specs, writeSpec{Name: tb.name, Kind: "plain", Ops: rc.drawOps(tb)})
	}
	ch := make(chan writeAnswer, 1)
	go func() {
		res, err := rc.w.write("write", specs)
		ch <- writeAnswer{res, err}
	}()
	return ch
}

type writeAnswer struct {
	res []writeResult
	err error
}

// recordWrites keeps the versions the writer made and checks its
// operations: none may fail but the client's own cleanup step inside a
// compaction, when reaper deleted a manifest it was about to read.
func (rc *retainChaos) recordWrites(res []writeResult, where string) {
	t := rc.t
	require.Len(t, res, len(rc.tables), where)
	for i, r := range res {
		tb := rc.tables[i]
		require.Equal(t, tb.name, r.Name)
		for _, v := range r.Versions {
			tb.records[v.Version] = v
			tb.latest = max(tb.latest, v.Version)
			rc.st.versions.Add(1)
		}
		for j, op := range r.Ops {
			switch {
			case op.Op == "restore" && op.Skipped:
				rc.st.restoresSkipped.Add(1)
			case op.Op == "restore" && op.Error == "":
				rc.st.restores.Add(1)
			}
			if op.Error == "" {
				continue
			}
			if op.Op == "compact" && optimizeRace(op.Error) {
				rc.st.optimizeRaces.Add(1)
				t.Logf("%s: %s op %d (compact): the client's cleanup step raced reaper's deletes: %s", where, tb.name, j, op.Error)
				continue
			}
			rc.writeErrors = true
			t.Errorf("%s: %s op %d (%s) failed beside reaper: %s", where, tb.name, j, op.Op, op.Error)
		}
	}
}

// optimizeRace: optimize's cleanup step lists _versions/ and then reads
// each manifest; one reaper deleted in between is not found. The
// compaction before it has committed; nothing of the table is lost.
func optimizeRace(msg string) bool {
	return strings.Contains(msg, "Not found") || strings.Contains(msg, "not found") || strings.Contains(msg, "No such file")
}

// round runs one seeded round and checks the tables after it.
func (rc *retainChaos) round(r int) {
	mode := "run"
	switch n := rc.rng.IntN(100); {
	case n < 40:
		mode = "kill"
	case n < 60:
		mode = "stop"
	}
	where := fmt.Sprintf("seed %d, round %d (%s)", rc.seed, r, mode)
	var ans writeAnswer
	switch mode {
	case "run":
		ans = rc.runWhileWriting(rc.startWrite(), where)
	case "kill":
		ch := rc.startWrite()
		rc.killPass(where)
		for range rc.rng.IntN(3) {
			rc.killPass(where) // a chain: the next pass may die finishing a record
		}
		ans = <-ch
	case "stop":
		ans = rc.stopPass(where)
	}
	require.NoError(rc.t, ans.err, where)
	rc.recordWrites(ans.res, where)
	rc.check(where)
}

// recordKillRound is a kill round whose points are drawn at a record's
// appearance, of any table, with no delay.
func (rc *retainChaos) recordKillRound(extra int) {
	where := fmt.Sprintf("seed %d, extra round %d (kill at a record)", rc.seed, extra)
	ch := rc.startWrite()
	atRecord := func() (string, string, time.Duration) { return evRecord, anyTable, 0 }
	for range 3 {
		rc.killPassAt(where, atRecord)
	}
	ans := <-ch
	require.NoError(rc.t, ans.err, where)
	rc.recordWrites(ans.res, where)
	rc.check(where)
}

// runWhileWriting runs whole passes back to back until the batch ends.
func (rc *retainChaos) runWhileWriting(ch <-chan writeAnswer, where string) writeAnswer {
	for {
		rc.pass(where, nil)
		select {
		case a := <-ch:
			return a
		default:
		}
	}
}

// retainReport is `reaper retain -o json` without --dry-run.
type retainReport struct {
	Tables []struct {
		Name            string `json:"name"`
		Result          string `json:"result"`
		Reason          string `json:"reason"`
		VersionsDeleted int    `json:"versions_deleted"`
		Objects         int64  `json:"objects"`
		Finished        bool   `json:"finished"`
	} `json:"tables"`
}

func parseRetain(t testing.TB, r result) retainReport {
	t.Helper()
	var rep retainReport
	require.NoError(t, json.Unmarshal(r.stdout, &rep), "retain output is not the JSON report:\n%s", r)
	return rep
}

// pass runs one whole pass and checks its report (checkPass).
func (rc *retainChaos) pass(where string, extra []string) (result, retainReport) {
	r := reaperWithEnv(rc.t, rc.retainArgs(extra...), retainEnv, &killer{line: rc.points.line})
	return r, rc.checkPass(r, where, "locked")
}

// checkPass checks a finished pass's report and counts it: every table
// cleaned, nothing to do or one of also (e.g. locked: a killed or stopped
// pass's lease not yet up for takeover), or failed because the pass lost
// its lease: on a loaded machine a pass starved for longer than its 400ms
// lease (less a tenth) counts it lost and stops, as it must. It exits 0
// unless a table failed, then 1.
func (rc *retainChaos) checkPass(r result, where string, also ...string) retainReport {
	t := rc.t
	rc.st.passes.Add(1)
	rep := rc.tally(r)
	failed := 0
	for _, tb := range rep.Tables {
		if tb.Result == "failed" && strings.Contains(tb.Reason, "lease lost") {
			failed++
			rc.st.starved.Add(1)
			t.Logf("%s: a pass lost %s's lease while it ran: %s", where, tb.Name, tb.Reason)
			continue
		}
		require.Contains(t, append([]string{"cleaned", "nothing_to_do"}, also...), tb.Result, "%s: %s: %s\n%s", where, tb.Name, tb.Reason, r)
	}
	require.Equal(t, min(failed, 1), r.code, "%s: exit status\n%s", where, r)
	return rep
}

// point draws a table whose lease is free (a pass skips a table a killed
// pass still holds), the event to draw after (its lease acquired or its
// record written) and a delay within how long that lasted last time.
func (rc *retainChaos) point() (ev, table string, delay time.Duration) {
	held := leases(rc.t, rc.b)
	var free []string
	for _, tb := range rc.tables {
		if _, ok := held[lifecycle.LockKey(tb.name)]; !ok {
			free = append(free, tb.name)
		}
	}
	if len(free) == 0 {
		free = rc.names()
	}
	table = free[rc.rng.IntN(len(free))]
	ev = []string{evAcquired, evRecord}[rc.rng.IntN(2)]
	return ev, table, time.Duration(rc.rng.Int64N(int64(rc.points.window(ev, table)) + 1))
}

// tally counts what a finished pass removed.
func (rc *retainChaos) tally(r result) retainReport {
	rep := parseRetain(rc.t, r)
	for _, tb := range rep.Tables {
		rc.st.versionsRemoved.Add(int64(tb.VersionsDeleted))
		rc.st.objects.Add(tb.Objects)
		if tb.Finished {
			rc.st.finishedRecords.Add(1)
		}
	}
	return rep
}

// reaperWithEnv runs the binary with extra environment; k may kill it.
func reaperWithEnv(t testing.TB, args, env []string, k *killer) result {
	t.Helper()
	return startReaper(t, args, env, k).wait(t)
}

// killPass SIGKILLs a pass at a drawn point (rc.point: after a table's
// lease is taken or its record appears): the lease, the record and a part
// of the deletes are left to later passes.
func (rc *retainChaos) killPass(where string) { rc.killPassAt(where, rc.point) }

// killPassAt is killPass at the point point draws.
func (rc *retainChaos) killPassAt(where string, point func() (ev, table string, delay time.Duration)) {
	t := rc.t
	ev, table, delay := point()
	r := startReaper(t, rc.retainArgs(), retainEnv, &killer{line: rc.points.line, start: func(kill func()) {
		rc.points.arm(ev, table, delay, kill)
	}}).wait(t)
	rc.points.disarm()
	if !r.killed {
		rc.st.finishedFirst.Add(1)
		rc.checkPass(r, where, "locked")
		return
	}
	rc.st.passes.Add(1)
	rc.st.kills.Add(1)
	if recs := rc.records(); len(recs) > 0 {
		rc.st.killRecords.Add(1)
		var progress []string
		for _, tb := range rc.tables {
			if gone, all := rc.recordProgress(tb.name); all > 0 {
				if gone > 0 && gone < all {
					rc.st.killMidDelete.Add(1)
				}
				progress = append(progress, fmt.Sprintf("%s: %d of %d files deleted", tb.name, gone, all))
			}
		}
		t.Logf("%s: killed %s after %s's %s, leaving records (%s)", where, delay, table, ev, strings.Join(progress, "; "))
	}
}

// recordProgress reads table name's retention record: how many of the
// files it names are gone, of how many (0, 0 without a record).
func (rc *retainChaos) recordProgress(name string) (gone, all int) {
	body, _, err := rc.b.raw.Get(rc.t.Context(), lifecycle.RetainKey(name), lifecycle.MaxRetainRecordBytes)
	if err != nil {
		return 0, 0
	}
	var rec struct {
		Files []struct {
			Key string `json:"key"`
		} `json:"files"`
	}
	require.NoError(rc.t, json.Unmarshal(body, &rec), "retention record of %s", name)
	for _, f := range rec.Files {
		if _, err := rc.b.raw.Head(rc.t.Context(), lifecycle.TableDir(name)+f.Key); err != nil {
			gone++
		}
	}
	return gone, len(rec.Files)
}

// records are the retention records at the root.
func (rc *retainChaos) records() []string {
	var out []string
	for _, tb := range rc.tables {
		if _, err := rc.b.raw.Head(rc.t.Context(), lifecycle.RetainKey(tb.name)); err == nil {
			out = append(out, lifecycle.RetainKey(tb.name))
		}
	}
	return out
}
