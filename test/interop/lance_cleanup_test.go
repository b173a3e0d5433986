package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
	"github.com/lance-reaper/reaper/internal/stack"
)

// Lance's own cleanup tests (rust/lance/src/dataset/cleanup.rs, read at
// lance-format/lance 13.0.0-beta.17; the client embeds Lance 12.0.0),
// ported to the LanceDB 0.39 npm client where the client can build the
// situation. Each case is built twice by the client, op for op: on the
// "lance" twin reaper plans and then the client's own cleanup runs, and the
// files it deletes must be the plan's, file for file (as the oracle,
// retention_oracle_test.go); on the "reaper" twin `reaper retain --dry-run`
// plans, must change nothing, and `reaper retain` must then delete exactly
// the files its dry run listed. The two plans must have the same shape (as
// many versions removed, as many files of each kind, verified or not), on
// a local root the two twins keep the same directories, and at the end
// LanceDB opens every version of both with the rows it had. Where the
// client refuses (a tagged version older than the cutoff) the plan must keep
// every tagged version, and the test deletes the plan's files from the lance
// twin itself, keeping the twins in step. Each case also asserts what its
// Lance test asserts, adapted where the client differs: the client's
// cleanup compacts first (optimize), so a case is planned once compaction
// has nothing left to do, and the client cannot fake a file's age (Lance's
// tests move a mock clock by days), so "older than 7 days" is
// deleteUnverified here.
//
// Lance's tests and what became of them (P: ported below, by case name):
//
//	cleanup_unreferenced_data_files                      P unreferenced_data_files
//	explain_cleanup_does_not_delete_files                P every step: the dry run changes nothing and the run deletes what it listed
//	every_removed_file_kind_contributes_its_bytes        P every_kind_contributes_its_bytes (the client's bytes_removed too)
//	cleanup_recent_verified_files                        P recent_verified_files
//	do_not_cleanup_newer_data                            P newer_data
//	cleanup_error_when_tagged_old_versions               P tagged_old_versions (case version_number; raw_main_alias: the client's tags.create takes a number only)
//	cleanup_around_tagged_old_versions                   P around_tagged_old_versions (reaper is error_if_tagged_old_versions=false; the client refuses until no old version is tagged)
//	cleanup_deletes_data_files_newer_than_tagged_version P newer_than_tagged (reaper only: the client refuses; its expectation checked on reaper's plan)
//	dont_cleanup_recent_unverified_files                 P in_progress_write (without its _blobs/ orphan: reaper refuses a table with managed blobs, docs/RETENTION.md)
//	dont_cleanup_in_progress_write                       P in_progress_write
//	cleanup_failed_commit_data_file                      P in_progress_write (delete_unverified case; aged case: no fake ages). Lance 12 keeps the orphan
//	                                                       while it is newer than every version (its listing cutoff); upstream now lists data/ further
//	cleanup_old_index                                    P old_index
//	clean_old_delete_files                               P old_delete_files
//	cleanup_collects_removed_file_metrics                P removed_file_metrics (per kind: the plans' shapes; the client reports bytes and versions only)
//	dont_clean_index_data_files                          P index_data_files
//	cleanup_removes_preexisting_empty_index_directories  P empty_index_directories (delete_unverified instead of a 10-day clock)
//	cleanup_applies_unverified_policy_to_fresh_empty_index_directory
//	                                                     P empty_index_directories
//	cleanup_does_not_remove_empty_directory_through_index_symlink
//	                                                     P index_symlink
//	cleanup_recent_replaced_index_with_short_retention   P recent_replaced_index (the index files rewritten after the newest version)
//	cleanup_old_uncommitted_index_artifacts              P uncommitted_index_artifacts (delete_unverified instead of a 10-day clock)
//	cleanup_removes_aged_temp_files_in_data_dir          P data_dir_temp_file (fresh, delete_unverified; Lance 12 keeps data/.tmp*, upstream now deletes it)
//	cleanup_applies_unverified_policy_to_fresh_temp_file_in_data_dir
//	                                                     P data_dir_temp_file
//	cleanup_and_retain_3_recent_versions                 P retain_3_recent_versions (reaper's keep_versions; the client at the cutoff it amounts to)
//	cleanup_before_ts_and_retain_n_recent_versions       P before_ts_and_retain_n
//	cleanup_preserves_unmanaged_dirs_and_files           P unmanaged_dirs_and_files
//	cleanup_preserves_child_after_source_manifest_failure
//	                                                     P child_after_missing_source (case missing_source; head_error, read_error inject
//	                                                       faults into Lance's own store reads)
//	cleanup_lineage_main                                 P lineage_main (branch cleanups and compactions by the client)
//	cleanup_lineage_branch1, _branch3, _branch4          not ported: they clean branches, which reaper never does (clean_referenced_branches=false)
//	auto_clean_referenced_branches_from_branch2, _from_main, _with_tags, explain_cleanup_with_referenced_branches_matches_cleanup
//	                                                     not ported: clean_referenced_branches cascades into branches
//	auto_cleanup_old_versions, test_auto_cleanup_interval_zero
//	                                                     not ported: a writer's hook (lance.auto_cleanup.*) run at commit, not a cleanup of a table at rest
//	managed_cleanup_preserves_protected_rows, managed_cleanup_distinguishes_column_projections,
//	managed_cleanup_deduplicates_reads_and_retries_failures, cleanup_blob_v2_sidecar_files,
//	cleanup_recent_blob_v2_sidecar_files_when_verified, cleanup_removes_emptied_blob_v2_sidecar_directories
//	                                                     not ported: managed blobs; reaper refuses such a table (docs/RETENTION.md)
//	lineage_retention_covers_inherited_overlay_files, keep_set_covers_referenced_overlay_files
//	                                                     not ported: data overlays are newer than Lance 12 (reaper refuses fields it does not know)
//	cleanup_old_replaced_segment_keeps_still_referenced_segments
//	                                                     not ported: commits hand-made index segment metadata, which the client cannot
//	cleanup_ignores_old_manifest_removed_after_listing, can_recover_delete_failure, cleanup_handles_wrapped_delete_errors,
//	expired_manifest_size_tolerates_a_vanished_manifest, test_a_manifest_that_fails_to_delete_keeps_its_record
//	                                                     not ported: faults injected into Lance's store; reaper's own are test/chaos and internal/lifecycle
//	cleanup_specific_versions_only                       not ported: neither the client nor reaper removes a chosen version
//	cleanup_rejects_retain_zero_versions, retain_n_versions_does_not_read_manifests, test_calculate_duration,
//	test_cleanup_with_rate_limit                         not ported: Lance's policy builder and rate limiter, not cleanup results
//	test_cleanup_forgets_removed_versions_in_the_external_store
//	                                                     not ported: an external manifest store of Lance's tests (reaper's s3+ddb rows: ddb_test.go)
//	frag_reuse_map_gc (referenced_map_is_kept, map_released_by_trim_is_collected_with_its_manifests, orphan_map_ages_out,
//	reference_resolution_reads_external_entries, end_to_end_lifecycle, merge_keeps_*, delta_drain_stages_partial_then_full,
//	v0_dataset_is_untouched)                             not ported: _fri/ row maps are newer than Lance 12; reaper never plans _fri/

// cop is one client operation of js/retention.mjs (its header lists them).
type cop struct {
	Op     string `json:"op"`
	From   int    `json:"from,omitempty"`
	To     int    `json:"to,omitempty"`
	Where  string `json:"where,omitempty"`
	Column string `json:"column,omitempty"`
	Type   string `json:"type,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Back   int    `json:"back,omitempty"`
	Branch string `json:"branch,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Ops    []cop  `json:"ops,omitempty"`
}

// newest, as a clean step's after, places the cutoff after the newest
// version (Lance's tests: before_timestamp = now).
const newest = -1

// cleanCase is one ported test: steps run in order on both twins.
type cleanCase struct {
	name  string
	kind  string // "plain" (default) or "vectors"
	local bool   // needs a local root (directories, links)
	s3    bool   // also run on versitygw
	steps []cstep
}

// cstep is one step: client writes, hand-made changes, or a cleanup.
type cstep struct {
	ops   []cop
	files func(t *testing.T, w *twin)
	clean *cleanStep
	// check runs on each twin after the step.
	check func(t *testing.T, w *twin)
	// stabilize: the client compacts and optimizes indices until it has
	// nothing left to do (every clean step starts so), before the next step.
	stabilize bool
}

// cleanStep cleans both twins at one cutoff.
type cleanStep struct {
	// after places the cutoff mid-gap after this version (0: before every
	// version; newest: after the newest).
	after int
	// keep is reaper's keep_versions (0: 1); the client, which has none,
	// cleans at the cutoff it amounts to.
	keep int
	du   bool
	// refused: the client refuses, its error containing this.
	refused string
	// versions is how many versions the plans remove; files how many files
	// of each kind they delete (fileKind's names; -1: at least one; a kind
	// not named: none); neither is checked when loose (the twins and Lance
	// still have to agree).
	versions int
	files    map[string]int
	loose    bool
}

func client(o ...cop) cstep                           { return cstep{ops: o} }
func stabilized() cstep                               { return cstep{stabilize: true} }
func byHand(fn func(t *testing.T, w *twin)) cstep     { return cstep{files: fn} }
func cleanAt(c cleanStep) cstep                       { return cstep{clean: &c} }
func checkTwins(fn func(t *testing.T, w *twin)) cstep { return cstep{check: fn} }

// The client operations the cases use.
func create(from, to int) cop            { return cop{Op: "create", From: from, To: to} }
func add(from, to int) cop               { return cop{Op: "add", From: from, To: to} }
func overwrite(from, to int) cop         { return cop{Op: "overwrite", From: from, To: to} }
func deleteWhere(where string) cop       { return cop{Op: "delete", Where: where} }
func indexOn(column, typ string) cop     { return cop{Op: "index", Column: column, Type: typ} }
func tag(name string, back int) cop      { return cop{Op: "tag", Tag: name, Back: back} }
func untag(name string) cop              { return cop{Op: "untag", Tag: name} }
func onBranch(name string, o ...cop) cop { return cop{Op: "on_branch", Branch: name, Ops: o} }

func lanceCleanupCases() []cleanCase {
	overwrites := client(create(0, 100), overwrite(100, 200), overwrite(200, 300), overwrite(300, 400), overwrite(400, 500))
	return []cleanCase{
		{name: "unreferenced_data_files", s3: true, steps: []cstep{
			client(create(0, 100), overwrite(100, 200)),
			cleanAt(cleanStep{after: 1, versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
		}},
		{name: "recent_verified_files", steps: []cstep{
			client(create(0, 100), overwrite(100, 200)),
			cleanAt(cleanStep{after: newest, versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
		}},
		{name: "every_kind_contributes_its_bytes", kind: "vectors", steps: []cstep{
			client(create(0, 300), indexOn("vector", "ivf_flat"), deleteWhere("id < 20"), overwrite(300, 600)),
			cleanAt(cleanStep{after: newest, versions: 3, files: map[string]int{"manifest": 3, "txn": 3, "data": 1, "deletion": 1, "index": -1}}),
		}},
		{name: "newer_data", steps: []cstep{
			// Upstream: the three data files stay. Here the client's compaction
			// adds a fourth; the two appends still reference the first.
			client(create(0, 100), add(100, 200), add(200, 300)),
			cleanAt(cleanStep{after: 1, versions: 1, files: map[string]int{"manifest": 1, "txn": 1}}),
		}},
		{name: "tagged_old_versions", s3: true, steps: []cstep{
			client(create(0, 100), overwrite(100, 200), overwrite(200, 300),
				tag("old-tag", 2), tag("another-old-tag", 0), cop{Op: "tag_update", Tag: "another-old-tag", Back: 1}),
			cleanAt(cleanStep{after: 0}),
			cleanAt(cleanStep{after: newest, refused: "2 tagged version(s)"}),
			client(untag("old-tag")),
			cleanAt(cleanStep{after: newest, refused: "1 tagged version(s)", versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
			client(untag("another-old-tag")),
			cleanAt(cleanStep{after: newest, versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
		}},
		{name: "around_tagged_old_versions", steps: []cstep{
			client(create(0, 100), overwrite(100, 200), overwrite(200, 300), tag("old-tag", 2), tag("another-old-tag", 1), tag("tag-latest", 0)),
			cleanAt(cleanStep{after: newest, refused: "2 tagged version(s)"}),
			client(untag("old-tag")),
			cleanAt(cleanStep{after: newest, refused: "1 tagged version(s)", versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
			client(untag("another-old-tag")),
			cleanAt(cleanStep{after: newest, versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
		}},
		{name: "newer_than_tagged", steps: []cstep{
			// Version 2 is newer than the tagged version 1: its data file goes
			// although written after the earliest version kept (lance#8705).
			client(create(0, 100), overwrite(100, 200), overwrite(200, 300), tag("keep-v1", 2)),
			cleanAt(cleanStep{after: newest, refused: "1 tagged version(s)", versions: 1, files: map[string]int{"manifest": 1, "data": 1, "txn": 1}}),
		}},
		{name: "in_progress_write", steps: []cstep{
			client(create(0, 100)),
			byHand(func(t *testing.T, w *twin) { w.put(t, orphanData, "a failed append's data") }),
			// Newer than every version: a write in progress, kept even with
			// delete_unverified (Lance 12 lists data/ only up to the earliest
			// version kept).
			cleanAt(cleanStep{after: newest}),
			cleanAt(cleanStep{after: newest, du: true}),
			client(add(100, 200)),
			cleanAt(cleanStep{after: newest, versions: -1, files: map[string]int{"manifest": -1, "txn": -1, "data": -1}}),
			cleanAt(cleanStep{after: newest, du: true, files: map[string]int{"data": 1}}),
		}},
		{name: "old_index", kind: "vectors", s3: true, steps: []cstep{
			client(create(0, 300), indexOn("vector", "ivf_flat"), overwrite(300, 600)),
			cleanAt(cleanStep{after: 2, versions: 2, files: map[string]int{"manifest": 2, "txn": 2, "data": 1, "index": -1}}),
		}},
		{name: "old_delete_files", steps: []cstep{
			client(create(0, 16), add(16, 32), deleteWhere("id < 20"), overwrite(32, 48), deleteWhere("id >= 40")),
			cleanAt(cleanStep{after: 3, versions: 3, files: map[string]int{"manifest": 3, "txn": 3, "data": 2, "deletion": 1}}),
		}},
		{name: "removed_file_metrics", kind: "vectors", steps: []cstep{
			client(create(0, 512), add(512, 1024), indexOn("vector", "ivf_flat"), deleteWhere("id < 20"), overwrite(1024, 1536), deleteWhere("id >= 1300")),
			cleanAt(cleanStep{after: 4, versions: 4, files: map[string]int{"manifest": 4, "txn": 4, "data": -1, "deletion": -1, "index": -1}}),
		}},
		{name: "index_data_files", kind: "vectors", steps: []cstep{
			// A btree index is .lance files under _indices/: no fragment
			// names them, and they stay.
			client(create(0, 300), indexOn("vector", "ivf_flat"), indexOn("id", "btree")),
			cleanAt(cleanStep{after: 0}),
		}},
		{name: "empty_index_directories", kind: "vectors", local: true, steps: []cstep{
			client(create(0, 300), indexOn("vector", "ivf_flat")),
			stabilized(), // the index it optimizes is the one in use
			byHand(func(t *testing.T, w *twin) {
				w.mkdir(t, "_indices/"+uuidName(1))
				w.mkdir(t, "_indices/"+uuidName(2)+"/empty_nested_dir")
				w.mkdir(t, "_indices/"+w.latestIndex(t)+"/empty_nested_dir") // an index in use keeps it
				inProgress := "_indices/" + uuidName(3)
				w.put(t, inProgress+"/index.idx", "idx")
				w.put(t, inProgress+"/auxiliary.idx", "aux")
				w.mkdir(t, inProgress+"/empty_in_progress_dir")
			}),
			cleanAt(cleanStep{after: newest, versions: -1, files: map[string]int{"manifest": -1, "txn": -1, "index": -1}}),
			checkTwins(func(t *testing.T, w *twin) {
				require.DirExists(t, w.path("_indices/"+uuidName(1)), "fresh: kept without delete_unverified")
			}),
			cleanAt(cleanStep{after: newest, du: true, files: map[string]int{"index": 2}}),
			checkTwins(func(t *testing.T, w *twin) {
				for i := 1; i <= 3; i++ {
					require.NoDirExists(t, w.path("_indices/"+uuidName(i)))
				}
				require.DirExists(t, w.path("_indices/"+w.latestIndex(t)+"/empty_nested_dir"))
			}),
		}},
		{name: "index_symlink", local: true, steps: []cstep{
			client(create(0, 100)),
			byHand(func(t *testing.T, w *twin) {
				w.outside = t.TempDir()
				require.NoError(t, os.Mkdir(filepath.Join(w.outside, "must_remain"), 0o755))
				w.mkdir(t, "_indices")
				require.NoError(t, os.Symlink(w.outside, w.path("_indices/"+uuidName(1))))
			}),
			cleanAt(cleanStep{after: newest, du: true}),
			checkTwins(func(t *testing.T, w *twin) {
				require.DirExists(t, filepath.Join(w.outside, "must_remain"), "never through a link")
				fi, err := os.Lstat(w.path("_indices/" + uuidName(1)))
				require.NoError(t, err)
				require.NotZero(t, fi.Mode()&os.ModeSymlink)
			}),
		}},
		{name: "recent_replaced_index", s3: true, steps: []cstep{
			client(create(0, 100), add(100, 200), indexOn("id", "btree"), indexOn("id", "btree")),
			// The index files written after every version: _indices/ is
			// listed whole, and the replaced index's files are verified.
			byHand(func(t *testing.T, w *twin) { w.rewrite(t, "_indices/") }),
			cleanAt(cleanStep{after: 3, versions: 3, files: map[string]int{"manifest": 3, "txn": 3, "index": -1}}),
		}},
		{name: "uncommitted_index_artifacts", s3: true, steps: []cstep{
			client(create(0, 100)),
			byHand(func(t *testing.T, w *twin) {
				staging := "_indices/" + uuidName(1) + "/partial_" + uuidName(2)
				built := "_indices/" + uuidName(3)
				for _, d := range []string{staging, built} {
					w.put(t, d+"/index.idx", "idx")
					w.put(t, d+"/auxiliary.idx", "aux")
				}
			}),
			cleanAt(cleanStep{after: newest}),
			cleanAt(cleanStep{after: newest, du: true, files: map[string]int{"index": 4}}),
		}},
		{name: "data_dir_temp_file", steps: []cstep{
			client(create(0, 100)),
			byHand(func(t *testing.T, w *twin) { w.put(t, "data/.tmpAb3Xz9", "x") }),
			client(overwrite(100, 200)),
			cleanAt(cleanStep{after: newest, versions: 1, files: map[string]int{"manifest": 1, "txn": 1, "data": 1}}),
			cleanAt(cleanStep{after: newest, du: true}),
			checkTwins(func(t *testing.T, w *twin) {
				require.NotNil(t, w.get(t, "data/.tmpAb3Xz9"), "Lance 12 keeps data/.tmp*")
			}),
		}},
		{name: "retain_3_recent_versions", steps: []cstep{
			overwrites,
			cleanAt(cleanStep{after: newest, keep: 3, versions: 2, files: map[string]int{"manifest": 2, "txn": 2, "data": 2}}),
		}},
		{name: "before_ts_and_retain_n", steps: []cstep{
			overwrites,
			cleanAt(cleanStep{after: 0, keep: 3}),
			cleanAt(cleanStep{after: newest, keep: 10}),
			cleanAt(cleanStep{after: 2, keep: 3, versions: 2, files: map[string]int{"manifest": 2, "txn": 2, "data": 2}}),
		}},
		{name: "unmanaged_dirs_and_files", s3: true, steps: []cstep{
			client(create(0, 100)),
			byHand(func(t *testing.T, w *twin) {
				for _, k := range []string{"images/clip.mp4", "misc/notes.txt", "tree/branchA/data.bin", "_versions/.tmp/orphan"} {
					w.put(t, k, "unmanaged "+k)
				}
			}),
			client(overwrite(100, 200)),
			byHand(func(t *testing.T, w *twin) { w.removeAll(t, "_transactions/") }),
			cleanAt(cleanStep{after: newest, du: true, versions: 1, files: map[string]int{"manifest": 1, "data": 1, "tmp": 1}}),
			checkTwins(func(t *testing.T, w *twin) {
				for _, k := range []string{"images/clip.mp4", "misc/notes.txt", "tree/branchA/data.bin"} {
					require.NotNil(t, w.get(t, k), "%s stays", k)
				}
				require.Nil(t, w.get(t, "_versions/.tmp/orphan"))
			}),
		}},
		{name: "child_after_missing_source", local: true, steps: []cstep{
			client(create(0, 100), cop{Op: "branch", Branch: "child"}, overwrite(100, 200)),
			byHand(func(t *testing.T, w *twin) { w.removeManifest(t, 1) }),
			cleanAt(cleanStep{after: 1}),
		}},
		{name: "lineage_main", s3: true, steps: []cstep{
			// Lance's lineage: branch1 from main, dev/branch2 from branch1,
			// feature/nathan/branch3 from dev/branch2, branch4 from a later
			// main; each written (append, delete, optimize: write_data) by the
			// client, which also compacts and cleans the branches. reaper
			// cleans main only, as Lance with clean_referenced_branches=false.
			client(create(0, 50), indexOn("category", "fts"), add(50, 55), deleteWhere("id = 54"), cop{Op: "optimize"},
				cop{Op: "branch", Branch: "branch1", From: 1000, To: 1005}, onBranch("branch1", deleteWhere("id = 1004"), cop{Op: "optimize"}),
				cop{Op: "branch", Branch: "dev/branch2", Ref: "branch1", From: 2000, To: 2005}, onBranch("dev/branch2", deleteWhere("id = 2004"), cop{Op: "optimize"}),
				cop{Op: "branch", Branch: "feature/nathan/branch3", Ref: "dev/branch2", From: 3000, To: 3005},
				onBranch("feature/nathan/branch3", deleteWhere("id = 3004"), cop{Op: "optimize"}),
				add(55, 60), deleteWhere("id = 59"), cop{Op: "optimize"},
				cop{Op: "branch", Branch: "branch4", From: 4000, To: 4005}, onBranch("branch4", deleteWhere("id = 4004"), cop{Op: "optimize"})),
			client(add(60, 65), deleteWhere("id = 64"), cop{Op: "optimize"}),
			// Each branch's root version stays for its manifest alone: its
			// transaction file goes, in the run as in its dry run.
			cleanAt(cleanStep{after: newest, loose: true}),
			client(add(65, 70), deleteWhere("id = 69")),
			cleanAt(cleanStep{after: newest, loose: true}),
			client(onBranch("branch1", add(1005, 1010), deleteWhere("id = 1009"), cop{Op: "optimize"}),
				onBranch("dev/branch2", add(2005, 2010), deleteWhere("id = 2009"), cop{Op: "optimize"}, cop{Op: "cleanup"}),
				onBranch("branch1", cop{Op: "cleanup"})),
			cleanAt(cleanStep{after: newest, loose: true}),
			client(onBranch("feature/nathan/branch3", add(3005, 3010), deleteWhere("id = 3009"), cop{Op: "optimize"}, cop{Op: "cleanup"})),
			cleanAt(cleanStep{after: newest, loose: true}),
			client(onBranch("dev/branch2", cop{Op: "cleanup"}), onBranch("branch1", cop{Op: "cleanup"})),
			cleanAt(cleanStep{after: newest, loose: true}),
			client(onBranch("branch4", add(4005, 4010), deleteWhere("id = 4009"), cop{Op: "optimize"}, cop{Op: "cleanup"})),
			cleanAt(cleanStep{after: newest, loose: true}),
		}},
	}
}

func TestLanceCleanupLocal(t *testing.T) {
	t.Parallel()
	runLanceCleanup(t, newLocal(t), false)
}

func TestLanceCleanupS3(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting the S3 server when LanceDB is missing
	runLanceCleanup(t, newS3(t), false)
}

// The cases the S3 run takes, again with the twins in LanceDB namespaces
// (the manifest layout: <8 hex>_<object id>/ directories): the lance twin
// in tenant_a/sub, the reaper twin in tenant_b, each cleaned as a root
// table is, file for file.
func TestLanceCleanupNamespacedLocal(t *testing.T) {
	t.Parallel()
	runLanceCleanup(t, newLocal(t), true)
}

func TestLanceCleanupNamespacedS3(t *testing.T) {
	t.Parallel()
	requireNode(t)
	runLanceCleanup(t, newS3(t), true)
}

// twinNamespaces are the namespaces of the lance and the reaper twin of a
// namespaced run.
var twinNamespaces = [2][]string{{"tenant_a", "sub"}, {"tenant_b"}}

// cleanupDrivers is how many js/retention.mjs servers the cases of one
// root share (each runs one request at a time; Node with LanceDB is about
// 150 MB).
const cleanupDrivers = 2

func runLanceCleanup(t *testing.T, b backend, namespaced bool) {
	node := requireNode(t)
	ctx := context.Background()
	store, err := stack.Open(ctx, b.uri(), b.lanceOptions(), stack.Options{})
	require.NoError(t, err)
	_, local := b.(*localBackend)
	c := &cli{bin: reaperBin(t), b: b}
	drivers := make(chan *retentionDriver, cleanupDrivers)
	var env []string
	if namespaced {
		env = nodeEnv(b) // the client opens namespaced tables without the storage options
	}
	for range cleanupDrivers {
		drivers <- startRetentionDriver(t, node, b, env...)
	}
	for _, cc := range lanceCleanupCases() {
		if (cc.local && !local) || ((!local || namespaced) && !cc.s3) {
			continue
		}
		t.Run(cc.name, func(t *testing.T) {
			t.Parallel()
			d := <-drivers
			defer func() { drivers <- d }()
			runCleanCase(t, ctx, store, d, c, b, cc, namespaced)
		})
	}
}

// twin is one of a case's two tables.
type twin struct {
	name string
	// namespace is its LanceDB namespace (none: a root table), and location
	// its directory there, found once the client created it.
	namespace []string
	location  string
	// lance: the client cleans it; else reaper does.
	lance   bool
	b       backend
	store   objstore.Store
	outside string // a directory outside the root (index_symlink)
	// versions are the table's versions at its last stabilize, rows what
	// each held when written.
	versions []builtVersion
	rows     map[uint64]int64
}

func (w *twin) dir() string {
	if w.location != "" {
		return w.location
	}
	return w.name + ".lance/"
}

// id is the name reaper and LanceDB know the twin by: its object id in a
// namespace.
func (w *twin) id() string { return strings.Join(append(slices.Clone(w.namespace), w.name), "$") }

// spec is the twin as the driver names it.
func (w *twin) spec() map[string]any {
	return map[string]any{"name": w.name, "namespace": w.namespace}
}

// locate finds a namespaced twin's directory, <8 hex>_<object id>/, in
// the root (once, after the client created it).
func (w *twin) locate(t *testing.T) {
	if len(w.namespace) == 0 || w.location != "" {
		return
	}
	for _, e := range w.b.rootEntries(t) {
		if strings.HasSuffix(e, "_"+w.id()+"/") {
			require.Empty(t, w.location, "%s: two directories", w.role())
			w.location = e
		}
	}
	require.NotEmpty(t, w.location, "%s: no directory in the root", w.role())
}

func (w *twin) role() string {
	if w.lance {
		return "lance twin " + w.name
	}
	return "reaper twin " + w.name
}

func (w *twin) put(t *testing.T, rel, body string) {
	_, err := w.store.Put(context.Background(), w.dir()+rel, []byte(body))
	require.NoError(t, err)
}

func (w *twin) get(t *testing.T, rel string) []byte { return w.b.get(t, w.dir()+rel) }

// path is rel's local path (cases marked local).
func (w *twin) path(rel string) string {
	return filepath.Join(w.b.(*localBackend).dir, filepath.FromSlash(strings.TrimSuffix(w.dir(), "/")), filepath.FromSlash(rel))
}

func (w *twin) mkdir(t *testing.T, rel string) { require.NoError(t, os.MkdirAll(w.path(rel), 0o755)) }

// rewrite writes every object under prefix again, the same bytes: they are
// then newer than every version.
func (w *twin) rewrite(t *testing.T, prefix string) {
	ctx := context.Background()
	keys := w.keys(t, prefix)
	require.NotEmpty(t, keys, "%s: nothing under %s", w.role(), prefix)
	for _, k := range keys {
		body, _, err := w.store.Get(ctx, k, 64<<20)
		require.NoError(t, err)
		_, err = w.store.Put(ctx, k, body)
		require.NoError(t, err)
	}
}

// removeAll deletes every object under prefix (a directory of the table
// removed by hand).
func (w *twin) removeAll(t *testing.T, prefix string) {
	keys := w.keys(t, prefix)
	require.NotEmpty(t, keys, "%s: nothing under %s", w.role(), prefix)
	require.NoError(t, w.store.DeleteBatch(context.Background(), keys))
}

// removeManifest deletes version n's manifest (V2 naming, as the client
// writes).
func (w *twin) removeManifest(t *testing.T, n uint64) {
	key := w.dir() + lance.VersionsDir + lance.ManifestName(lance.SchemeV2, n)
	require.NotNil(t, w.b.get(t, key), "%s: no manifest of version %d", w.role(), n)
	require.NoError(t, w.store.Delete(context.Background(), key))
}

// keys are the keys (relative to the root) under the table's prefix.
func (w *twin) keys(t *testing.T, prefix string) []string {
	var out []string
	require.NoError(t, w.store.Walk(context.Background(), w.dir()+prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}

// latestIndex is the uuid of the newest version's one index.
func (w *twin) latestIndex(t *testing.T) string {
	tb, err := lance.ReadTable(context.Background(), w.store, w.dir())
	require.NoError(t, err)
	_, indices := tb.Latest().Refs()
	require.Len(t, indices, 1, "%s: the newest version's indices", w.role())
	return indices[0]
}

// uuidName is the i-th hand-made index uuid.
func uuidName(i int) string { return fmt.Sprintf("c1ea0000-0000-4000-8000-%012d", i) }

// orphanData is the name of a data file a failed append leaves.
const orphanData = "data/1111000011110000111100000123456789abcdef0123456789.lance"

func runCleanCase(t *testing.T, ctx context.Context, store objstore.Store, d *retentionDriver, c *cli, b backend, cc cleanCase, namespaced bool) {
	kind := cc.kind
	if kind == "" {
		kind = "plain"
	}
	tw := []*twin{{name: cc.name + "_l", lance: true}, {name: cc.name + "_r"}}
	for i, w := range tw {
		w.b, w.store, w.rows = b, store, map[uint64]int64{}
		if namespaced {
			w.namespace = twinNamespaces[i]
		}
	}
	for i, st := range cc.steps {
		label := fmt.Sprintf("%s step %d", cc.name, i)
		switch {
		case st.ops != nil:
			specs := make([]map[string]any, len(tw))
			for j, w := range tw {
				specs[j] = w.spec()
				specs[j]["kind"], specs[j]["ops"] = kind, st.ops
			}
			var out struct {
				Tables []builtTable `json:"tables"`
			}
			d.call(t, "ops", specs, &out)
			for _, w := range tw {
				w.locate(t)
			}
		case st.files != nil:
			for _, w := range tw {
				st.files(t, w)
			}
		case st.check != nil:
			for _, w := range tw {
				st.check(t, w)
			}
		case st.stabilize:
			stabilizeTwins(t, d, tw)
		case st.clean != nil:
			cleanTwins(t, ctx, store, d, c, b, tw, *st.clean, label)
		}
	}
	verifyTwins(t, d, tw)
}

// stabilizeTwins lets the client compact until it has nothing left to do
// and records the versions and their rows.
func stabilizeTwins(t *testing.T, d *retentionDriver, tw []*twin) {
	specs := make([]map[string]any, len(tw))
	for i, w := range tw {
		specs[i] = w.spec()
	}
	var out struct {
		Tables []builtTable `json:"tables"`
	}
	d.call(t, "stabilize", specs, &out)
	require.Len(t, out.Tables, len(tw))
	for i, w := range tw {
		w.versions = out.Tables[i].Versions
		for _, v := range w.versions {
			if _, ok := w.rows[v.Version]; !ok {
				w.rows[v.Version] = v.Rows
			}
		}
	}
}

// cutoffAfter is the instant mid-gap after version n of vs (ascending):
// before every version for 0, after the newest for newest.
func cutoffAfter(vs []builtVersion, n int) time.Time {
	gap := minGap.Milliseconds()
	if n == newest {
		return time.UnixMilli(vs[len(vs)-1].TimestampMs + gap)
	}
	lo := -1
	for i, v := range vs {
		if v.Version <= uint64(n) {
			lo = i
		}
	}
	switch {
	case lo < 0:
		return time.UnixMilli(vs[0].TimestampMs - gap)
	case lo == len(vs)-1:
		return time.UnixMilli(vs[lo].TimestampMs + gap)
	}
	return time.UnixMilli((vs[lo].TimestampMs + vs[lo+1].TimestampMs) / 2)
}

// clientCutoff is the cutoff at which the client, which has no
// keep_versions, removes what reaper removes at cutoff keeping the newest
// keep versions.
func clientCutoff(vs []builtVersion, cutoff time.Time, keep int) time.Time {
	if keep <= 1 || len(vs) <= 1 {
		return cutoff
	}
	if len(vs) <= keep {
		return time.UnixMilli(vs[0].TimestampMs - minGap.Milliseconds())
	}
	k := time.UnixMilli((vs[len(vs)-keep-1].TimestampMs + vs[len(vs)-keep].TimestampMs) / 2)
	if k.Before(cutoff) {
		return k
	}
	return cutoff
}

// cleanTwins runs one clean step: the plans of both twins, reaper's dry
// run and run on the reaper twin, the client's cleanup on the lance twin,
// and the comparisons.
func cleanTwins(t *testing.T, ctx context.Context, store objstore.Store, d *retentionDriver, c *cli, b backend, tw []*twin, cs cleanStep, label string) {
	stabilizeTwins(t, d, tw)
	now, err := store.Now(ctx)
	require.NoError(t, err)
	plans := make([]retention.Plan, len(tw))
	reads := make([]*lance.Table, len(tw))
	before := make([]map[string]objstore.Object, len(tw))
	cutoffs := make([]time.Time, len(tw))
	for i, w := range tw {
		cutoffs[i] = cutoffAfter(w.versions, cs.after)
		tb, err := lance.ReadTable(ctx, store, w.dir())
		require.NoError(t, err, "%s: %s: the reader must handle every table the client writes", label, w.role())
		reads[i] = tb
		plans[i], err = retention.Compute(tb, retention.Policy{Before: cutoffs[i], KeepVersions: cs.keep, DeleteUnverified: cs.du}, now)
		require.NoError(t, err)
		before[i], err = listTable(ctx, store, w.dir())
		require.NoError(t, err)
	}
	lw, rw := tw[0], tw[1]
	lp, rp := plans[0], plans[1]

	// The reaper twin: the dry run changes nothing and lists the plan; the
	// run deletes exactly what it listed (Lance: explain_cleanup_does_not_delete_files).
	args := []string{"-o", "json", "--allow-short-ttl", "--before", cutoffs[1].UTC().Format(time.RFC3339Nano)}
	if cs.keep > 0 {
		args = append(args, "--keep-versions", fmt.Sprint(cs.keep))
	}
	if cs.du {
		args = append(args, "--delete-unverified")
	}
	dry := retainCLI(t, c, append(append([]string{"--dry-run"}, args...), rw.id()), rw.id(), "planned", "nothing_to_do")
	listed := prefixed(rw.dir(), planKeys(rp))
	require.Equal(t, listed, dry, "%s: reaper retain --dry-run lists the plan", label)
	afterDry, err := listTable(ctx, store, rw.dir())
	require.NoError(t, err)
	require.Equal(t, keysOf(before[1]), keysOf(afterDry), "%s: the dry run changed the table", label)
	retainCLI(t, c, append(args, rw.id()), rw.id(), "cleaned", "nothing_to_do")
	afterRun, err := listTable(ctx, store, rw.dir())
	require.NoError(t, err)
	require.Equal(t, planKeys(rp), deletedKeys(before[1], afterRun), "%s: reaper retain deleted what its dry run listed, file for file", label)

	// The lance twin: the client's own cleanup at the cutoff.
	res := d.cleanup(t, []cleanupSpec{{Name: lw.name, Namespace: lw.namespace, CutoffMs: clientCutoff(lw.versions, cutoffs[0], cs.keep).UnixMilli(), DeleteUnverified: cs.du}})[0]
	afterLance, err := listTable(ctx, store, lw.dir())
	require.NoError(t, err)
	if res.Refused != "" {
		require.NotEmpty(t, cs.refused, "%s: the client refused: %s", label, res.Refused)
		require.Contains(t, res.Refused, cs.refused, label)
		require.Equal(t, keysOf(before[0]), keysOf(afterLance), "%s: the client refused yet changed files", label)
		requireTaggedKept(t, reads[0], lp, label)
		// In step with the reaper twin: the plan's files go by hand, the
		// directories pruned as a run prunes them.
		keys := prefixed(lw.dir(), planKeys(lp))
		pctx := objstore.WithPruneWithin(ctx, lw.dir()+lance.IndicesDir)
		for batch := range slices.Chunk(keys, objstore.MaxBatchDelete) {
			require.NoError(t, store.DeleteBatch(pctx, batch))
		}
	} else {
		require.Empty(t, cs.refused, "%s: the client did not refuse", label)
		compareWithLance(t, reads[0], lp, before[0], afterLance, res, label)
		var deleted int64
		for _, k := range deletedKeys(before[0], afterLance) {
			deleted += before[0][k].Size
		}
		require.Equal(t, deleted, lp.Bytes, "%s: the plan's bytes are what Lance deleted", label)
		require.Equal(t, deleted, res.BytesRemoved, "%s: the client's bytes_removed is what it deleted (Lance: bytes_removed == before - after)", label)
		require.Equal(t, len(lp.Removed), res.VersionsRemoved, "%s: the client's old_versions", label)
	}

	// The two plans alike, and as the Lance test says.
	require.Equal(t, planShape(lp), planShape(rp), "%s: the twins' plans differ", label)
	for _, p := range []retention.Plan{lp, rp} {
		if cs.loose {
			break
		}
		requireCount(t, len(p.Removed), cs.versions, label+": versions removed")
		kinds := map[string]int{}
		for _, f := range p.Files {
			kinds[fileKind(f.Key)]++
		}
		for _, k := range []string{"manifest", "tmp", "data", "deletion", "txn", "index", "other"} {
			requireCount(t, kinds[k], cs.files[k], fmt.Sprintf("%s: %s files deleted", label, k))
		}
	}
	if _, local := b.(*localBackend); local {
		require.Equal(t, dirShape(t, lw), dirShape(t, rw), "%s: the twins' directories differ (lance twin first)", label)
	}
}

// requireCount checks got against want: exactly, or at least one for -1.
func requireCount(t *testing.T, got, want int, what string) {
	t.Helper()
	if want < 0 {
		require.Positive(t, got, what)
		return
	}
	require.Equal(t, want, got, what)
}

// retainCLI runs `reaper retain` on one table and returns the files it
// lists (keys relative to the root, sorted), requiring one of results.
func retainCLI(t *testing.T, c *cli, args []string, name string, results ...string) []string {
	t.Helper()
	out, code := c.run(t, "retain", args...)
	require.Equal(t, 0, code, "reaper retain %v", args)
	var rep struct {
		Tables []struct {
			Name   string `json:"name"`
			Result string `json:"result"`
			Reason string `json:"reason"`
			Files  []struct {
				Key string `json:"key"`
			} `json:"files"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Tables, 1, out)
	require.Equal(t, name, rep.Tables[0].Name)
	require.Contains(t, results, rep.Tables[0].Result, "reaper retain %v: %s", args, rep.Tables[0].Reason)
	keys := []string{}
	for _, f := range rep.Tables[0].Files {
		keys = append(keys, f.Key)
	}
	sort.Strings(keys)
	return keys
}

func planKeys(p retention.Plan) []string {
	keys := []string{}
	for _, f := range p.Files {
		keys = append(keys, f.Key)
	}
	sort.Strings(keys)
	return keys
}

func prefixed(dir string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = dir + k
	}
	return out
}

// deletedKeys are the keys of before that after no longer has, sorted.
func deletedKeys(before, after map[string]objstore.Object) []string {
	out := []string{}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// fileKind names what a key of a table is.
func fileKind(key string) string {
	switch {
	case strings.HasPrefix(key, lance.VersionsDir):
		if _, ok := lance.ManifestVersion(strings.TrimPrefix(key, lance.VersionsDir)); ok {
			return "manifest"
		}
		return "tmp"
	case strings.HasPrefix(key, lance.DataDir):
		return "data"
	case strings.HasPrefix(key, lance.DeletionsDir):
		return "deletion"
	case strings.HasPrefix(key, lance.TransactionsDir):
		return "txn"
	case strings.HasPrefix(key, lance.IndicesDir):
		return "index"
	}
	return "other"
}

// planShape is a plan without names: versions removed, and files by kind
// and why.
func planShape(p retention.Plan) map[string]int {
	out := map[string]int{"versions removed": len(p.Removed)}
	for _, f := range p.Files {
		out[fileKind(f.Key)+": "+strings.Fields(f.Why)[0]]++
	}
	return out
}

// uuidLike matches the generated parts of names (index uuids, data file
// names, version numbers).
var uuidLike = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}`)

// dirShape is every directory of a twin's table (local), names without
// their generated parts, sorted.
func dirShape(t *testing.T, w *twin) []string {
	var out []string
	root := w.path("")
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, uuidLike.ReplaceAllString(filepath.ToSlash(rel), "*"))
		return err
	}))
	sort.Strings(out)
	return out
}

// requireTaggedKept: the client refused for a tagged old version; reaper's
// plan keeps every tagged version of main and every file it references.
func requireTaggedKept(t *testing.T, tb *lance.Table, plan retention.Plan, label string) {
	kept := map[uint64]bool{}
	for _, k := range plan.Kept {
		kept[k.Version] = true
	}
	deleted := map[string]bool{}
	for _, f := range plan.Files {
		deleted[f.Key] = true
	}
	tagged := 0
	for _, tag := range tb.Tags {
		for _, v := range tb.Versions {
			if tag.Branch != "" || v.Number != tag.Version {
				continue
			}
			tagged++
			require.True(t, kept[v.Number], "%s: tagged version %d (%s) is not kept: %v", label, v.Number, tag.Name, plan.Kept)
			keys, indices := v.Refs()
			for _, k := range append(keys, v.Key) {
				require.False(t, deleted[k], "%s: the plan deletes %s of tagged version %d", label, k, v.Number)
			}
			for _, ix := range indices {
				for k := range deleted {
					require.False(t, strings.HasPrefix(k, lance.IndicesDir+ix+"/"), "%s: the plan deletes %s of tagged version %d", label, k, v.Number)
				}
			}
		}
	}
	require.Positive(t, tagged, "%s: refused for tagged versions, but none is in the table", label)
}

// verifyTwins: LanceDB opens every version of both twins with the rows it
// had, and every branch, alike on both.
func verifyTwins(t *testing.T, d *retentionDriver, tw []*twin) {
	specs := make([]map[string]any, len(tw))
	for i, w := range tw {
		specs[i] = w.spec()
	}
	vts := d.verifySpecs(t, specs)
	for i, vt := range vts {
		w := tw[i]
		for _, v := range vt.Versions {
			require.Empty(t, v.Error, "%s: version %d does not open after the cleanups", w.role(), v.Version)
			if want, ok := w.rows[v.Version]; ok {
				require.Equal(t, want, v.Rows, "%s: version %d's rows", w.role(), v.Version)
			}
		}
		for _, br := range vt.Branches {
			require.Empty(t, br.Error, "%s: branch %s does not open after the cleanups", w.role(), br.Name)
		}
	}
	require.Equal(t, vts[0].Branches, vts[1].Branches, "the twins' branches read alike")
}
