package interop

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
)

// The tables of the root LanceDB writes, by what happens to them. Names use
// dots, dashes and underscores: reaper splits only the final suffix.
const (
	tEvents   = "events.2024"   // live: many versions, deletions, a scalar index, a tag, a branch
	tProfiles = "user-profiles" // live: btree and bitmap indices
	tVectors  = "item_vectors"  // live: a vector column with an IVF index
	tAudit    = "audit.deleted" // live: a table whose name ends in ".deleted" is not a marker

	tOldLogs = "old_logs.v1"       // dropped by the CLI (1s TTL), purged; has a tag and a branch
	tScratch = "tmp-scratch.lance" // dropped by the Go package (1s TTL), purged; stored at tmp-scratch.lance.lance/
	tAged    = "aged_table"        // Lance-form marker placed by the test, purged

	tArchive = "archive-2023" // dropped by the CLI (30d TTL): not due, revived by the Go package
	tStaging = "staging_v2"   // dropped by the Go package (default TTL): not due, revived by the CLI

	tConflict    = "conflict.tbl"         // dropped, then LanceDB adds rows: the purge refuses it
	tOverwritten = "revived-by-overwrite" // dropped, then LanceDB overwrites it (a revive by overwrite): refused
	tHardDropped = "hard.dropped"         // dropped, then LanceDB's own dropTable deletes the data: orphan marker

	tBadGarbage  = "bad-garbage"  // marker that is not JSON
	tBadNegative = "bad_negative" // marker with a negative deleted_at_ms
	tBadFuture   = "bad.future"   // marker dated two days ahead
)

var (
	allTables = []string{tEvents, tProfiles, tVectors, tAudit, tOldLogs, tScratch, tAged, tArchive, tStaging,
		tConflict, tOverwritten, tHardDropped, tBadGarbage, tBadNegative, tBadFuture}
	// purged are the tables whose data the purge reclaims; tHardDropped
	// has only its marker left when the purge comes.
	purged     = []string{tAged, tOldLogs, tScratch}
	survivors  = without(allTables, append([]string{tHardDropped}, purged...))
	badMarkers = []string{tBadFuture, tBadGarbage, tBadNegative}
	conflicts  = []string{tConflict, tOverwritten}
	live       = []string{tEvents, tProfiles, tVectors, tAudit}
	// The rows LanceDB adds to tConflict after its drop, and the rows it
	// overwrites tOverwritten with.
	conflictFrom, conflictTo   = 10_000, 10_050
	overwriteFrom, overwriteTo = 20_000, 20_040
)

// setupOps builds the root: every table with a history of its own.
func setupOps() []op {
	return []op{
		opCreate(tEvents, "plain", 0, 400),
		opAdd(tEvents, 400, 500),
		opAdd(tEvents, 500, 600),
		opDelete(tEvents, "id < 50"),
		opAdd(tEvents, 600, 700),
		opDelete(tEvents, "id % 10 = 3"),
		opIndex(tEvents, "id", "btree"),
		opTag(tEvents, "release-1", 3),
		opBranch(tEvents, "backfill", 2000, 2030),

		opCreate(tProfiles, "plain", 0, 200),
		opIndex(tProfiles, "id", "btree"),
		opIndex(tProfiles, "category", "bitmap"),
		opAdd(tProfiles, 200, 250),

		opCreate(tVectors, "vectors", 0, 300),
		opIndex(tVectors, "vector", "ivf_flat"),
		opAdd(tVectors, 300, 350),
		opDelete(tVectors, "id % 7 = 0"),

		opCreate(tAudit, "plain", 0, 30),
		opAdd(tAudit, 30, 40),

		opCreate(tOldLogs, "plain", 0, 300),
		opAdd(tOldLogs, 300, 400),
		opDelete(tOldLogs, "id % 4 = 1"),
		opIndex(tOldLogs, "id", "btree"),
		opAdd(tOldLogs, 400, 420),
		opTag(tOldLogs, "before-delete", 2),
		opBranch(tOldLogs, "exp", 3000, 3010),

		opCreate(tScratch, "vectors", 0, 100),
		opIndex(tScratch, "category", "bitmap"),
		opAdd(tScratch, 100, 150),

		opCreate(tAged, "plain", 0, 200),
		opAdd(tAged, 200, 260),
		opDelete(tAged, "id < 20"),
		opIndex(tAged, "category", "bitmap"),

		opCreate(tArchive, "plain", 0, 150),
		opAdd(tArchive, 150, 200),
		opDelete(tArchive, "id % 3 = 0"),
		opIndex(tArchive, "id", "btree"),

		opCreate(tStaging, "vectors", 0, 80),
		opAdd(tStaging, 80, 120),

		opCreate(tConflict, "plain", 0, 100),
		opAdd(tConflict, 100, 150),

		opCreate(tOverwritten, "plain", 0, 120),
		opAdd(tOverwritten, 120, 160),
		opIndex(tOverwritten, "id", "btree"),

		opCreate(tHardDropped, "vectors", 0, 40),

		opCreate(tBadGarbage, "plain", 0, 50),
		opCreate(tBadNegative, "plain", 0, 50),
		opCreate(tBadFuture, "plain", 0, 50),
		opAdd(tBadFuture, 50, 60),
	}
}

// scenario is one run of the suite against one root.
type scenario struct {
	b   backend
	db  *lanceDB
	cli cli
	ns  *reaper.Namespace

	// before is LanceDB's view of every table after setup (the conflicts:
	// after their post-drop writes).
	before map[string]snapshot
	// files and markers are the store's view just before the purge.
	files   map[string]map[string]object
	markers map[string][]byte
}

func runScenario(t *testing.T, b backend) {
	node := requireNode(t)
	bin := reaperBin(t)
	ns, err := reaper.Open(context.Background(), b.uri(), reaper.Options{
		StorageOptions: b.lanceOptions(),
		Logger:         slog.New(slog.NewTextHandler(tWriter{t}, nil)),
	})
	require.NoError(t, err)
	s := &scenario{
		b:   b,
		db:  newLanceDB(t, node, b.uri(), b.lanceOptions()),
		cli: cli{bin: bin, b: b},
		ns:  ns,
	}
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"lancedb_creates_root", s.createRoot},
		{"markers_placed_by_lance_and_bad_markers", s.placeMarkers},
		{"drop_with_cli", s.dropWithCLI},
		{"drop_with_go_package", s.dropWithGo},
		{"lancedb_writes_after_drop", s.writeAfterDrop},
		{"status_before_purge", s.statusBeforePurge},
		{"dry_run_deletes_nothing", s.dryRun},
		{"purge_pass", s.purgePass},
		{"revive", s.revive},
		{"lancedb_view_after_purge", s.lanceViewAfterPurge},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.fn) {
			return // later steps build on this one
		}
	}
}

// expectedReclaim counts, straight from the store, the objects and bytes of
// every table the purge must reclaim; the orphan marker reclaims none.
func (s *scenario) expectedReclaim(t *testing.T) map[string][2]int64 {
	out := map[string][2]int64{tHardDropped: {0, 0}}
	for _, n := range purged {
		var objects, bytes int64
		for _, o := range s.b.list(t, n+".lance/") {
			objects++
			bytes += o.Size
		}
		require.NotZero(t, objects, "%s has no objects", n)
		out[n] = [2]int64{objects, bytes}
	}
	return out
}

// markerFields reads deleted_at_ms and ttl_ms from a marker in the store.
func (s *scenario) markerFields(t *testing.T, name string) (deletedAt, ttl int64) {
	var m struct {
		DeletedAtMs int64 `json:"deleted_at_ms"`
		TTLMs       int64 `json:"ttl_ms"`
	}
	require.NoError(t, json.Unmarshal(s.b.get(t, name+".deleted"), &m))
	return m.DeletedAtMs, m.TTLMs
}

// status is the Go package's status of one table.
func (s *scenario) status(t *testing.T, name string) reaper.TableStatus {
	st, err := s.ns.Status(ctxT(t), name)
	require.NoError(t, err)
	require.Len(t, st, 1)
	return st[0]
}

// waitSecondAfter polls the clock until it is in a later whole second than
// ts, so that a write now is stamped strictly after ts at second precision.
func waitSecondAfter(t *testing.T, ts time.Time) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Unix() <= ts.Unix() {
		if time.Now().After(deadline) {
			t.Fatalf("clock did not pass %v", ts)
		}
		time.Sleep(10 * time.Millisecond) // polling the clock, not synchronizing
	}
}

func hasKeyPrefix(keys map[string]object, prefix string) bool {
	for k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func namesOf(st []reaper.TableStatus) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = s.Name
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func without(all, drop []string) []string {
	var out []string
	for _, n := range all {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}

// tWriter sends the Go package's logs to the test log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
