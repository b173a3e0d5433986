package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// retainFixture is a local root holding the table LanceDB wrote as
// "events", and retain's arguments for a policy that removes versions 1, 3
// and 4 of its 6 (2 is tagged; 5 and 6 are the newest two). The cutoff is
// a minute ahead: the fixture's files were written now, and a version goes
// only when the store wrote it before the cutoff too.
func retainFixture(t *testing.T) (root string, st *local.Store, args []string) {
	t.Helper()
	root = t.TempDir()
	st, err := local.Open(root)
	require.NoError(t, err)
	lancetest.LanceDB(t, st, "events.lance/")
	before := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	return root, st, []string{"retain", "--root", root, "--before", before, "--keep-versions", "2", "--allow-short-ttl", "-o", "json", "--log-level", "error"}
}

// `reaper retain` without --dry-run deletes what --dry-run listed, and a
// second run has nothing to do.
func TestRetainCommandDeletesWhatTheDryRunListed(t *testing.T) {
	root, st, args := retainFixture(t)

	code, out, stderr := run(t, append(args, "--dry-run")...)
	require.Equal(t, exitOK, code, stderr)
	var plan struct {
		Tables []struct {
			Result  string   `json:"result"`
			Removed []uint64 `json:"versions_removed"`
			Files   []struct {
				Key string `json:"key"`
			} `json:"files"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Tables, 1)
	require.Equal(t, "planned", plan.Tables[0].Result)
	for _, f := range plan.Tables[0].Files {
		require.FileExists(t, filepath.Join(root, f.Key))
	}

	code, out, stderr = run(t, args...)
	require.Equal(t, exitOK, code, stderr)
	var ran struct {
		Tables []retainRunJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ran))
	require.Len(t, ran.Tables, 1)
	require.Equal(t, "cleaned", ran.Tables[0].Result)
	require.Equal(t, len(plan.Tables[0].Removed), ran.Tables[0].VersionsDeleted)
	require.Equal(t, int64(len(plan.Tables[0].Files)), ran.Tables[0].Objects)
	for _, f := range plan.Tables[0].Files {
		require.NoFileExists(t, filepath.Join(root, f.Key))
	}
	_, err := lance.ReadTable(context.Background(), st, "events.lance/")
	require.NoError(t, err, "the table still reads")

	code, out, _ = run(t, args...)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, `"result": "nothing_to_do"`)
}

// `reaper purge` with retention enabled (here by REAPER_RETENTION_*, as a
// CronJob would set it) also cleans the root's live tables: the JSON lists
// them under "retained", the table report in a section of its own and in
// its summary, and the table still reads.
func TestPurgeCleansLiveTablesWithRetention(t *testing.T) {
	root := t.TempDir()
	st, err := local.Open(root)
	require.NoError(t, err)
	lancetest.LanceDB(t, st, "events.lance/")
	t.Setenv("REAPER_RETENTION_ENABLED", "true")
	// The fixture was written just now: versions older than a millisecond
	// by the store's clock too, but the newest two.
	t.Setenv("REAPER_RETENTION_OLDER_THAN", "1ms")
	t.Setenv("REAPER_RETENTION_KEEP_VERSIONS", "2")
	t.Setenv("REAPER_SAFETY_ALLOW_SHORT_TTL", "true")

	code, out, stderr := run(t, "purge", "--root", root, "--dry-run", "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	var rep struct {
		Retained []retainedJSON `json:"retained"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Retained, 1)
	planned := rep.Retained[0]
	require.Equal(t, "dry_run", string(planned.Result))
	require.Equal(t, "old_versions", string(planned.Code))
	require.Positive(t, planned.Versions)

	code, out, stderr = run(t, "purge", "--root", root, "--dry-run", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "VERSION RETENTION (dry run, would remove): 1 tables")
	require.Contains(t, out, fmt.Sprintf("dry run, nothing was deleted: would have reclaimed 0 objects, 0 B from 0 tables; 0 skipped, 0 failed; version retention: would remove %d versions, %d objects", planned.Versions, planned.Objects))

	// The table, its summary and the pass's log line count what retention
	// removed beside the purges.
	code, out, stderr = run(t, "purge", "--root", root, "--log-level", "info")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "VERSION RETENTION: 1 tables")
	require.Regexp(t, `events +old_versions +`+strconv.Itoa(planned.Versions)+` +`+strconv.FormatInt(planned.Objects, 10), out)
	require.Contains(t, out, fmt.Sprintf("version retention: removed %d versions, %d objects", planned.Versions, planned.Objects))
	require.Regexp(t, fmt.Sprintf(`msg="pass finished" pass_id=\S+ result=success purged=0 objects=0 bytes=0 skipped=0 failed=0 tables_cleaned=1 versions_removed=%d retention_objects=%d retention_bytes=%d retention_failed=0 duration_seconds=`,
		planned.Versions, planned.Objects, planned.Bytes), stderr)
	require.Regexp(t, fmt.Sprintf(`msg="root finished" pass_id=\S+ root=\S+ purged=0 objects=0 bytes=0 skipped=0 failed=0 tables_cleaned=1 versions_removed=%d `, planned.Versions), stderr)
	_, err = lance.ReadTable(context.Background(), st, "events.lance/")
	require.NoError(t, err, "the table still reads")

	code, out, stderr = run(t, "purge", "--root", root, "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"code": "nothing_to_do"`)

	t.Setenv("REAPER_RETENTION_ENABLED", "false")
	code, out, _ = run(t, "purge", "--root", root, "-o", "json", "--log-level", "error")
	require.Equal(t, exitOK, code)
	require.NotContains(t, out, `"retained"`, "off: the purge JSON is as it was")
}

// `reaper retain --progress` prints the cleaned table's progress on
// stderr, marked version retention, ending with its done line, and with
// --dry-run a line per table as it is planned; a table with nothing to do
// prints none.
func TestRetainProgress(t *testing.T) {
	root, _, args := retainFixture(t)
	args = append(args, "--progress")

	// A dry run: one line per table as soon as it is planned.
	code, _, stderr := run(t, append(args, "--dry-run")...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "progress: events (file://"+root+"), version retention: planned: would remove 3 of 6 versions, ")

	code, out, stderr := run(t, args...)
	require.Equal(t, exitOK, code, stderr)
	var ran struct {
		Tables []retainRunJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ran))
	objs := ran.Tables[0].Objects
	require.Positive(t, objs)
	head := "progress: events (file://" + root + "), version retention: "
	require.Contains(t, stderr, head+"0/"+itoa(objs)+" objects (0%)")
	require.Contains(t, stderr, head+"done, "+itoa(objs)+" objects")

	for _, more := range [][]string{nil, {"--dry-run"}} {
		code, _, stderr = run(t, append(args, more...)...)
		require.Equal(t, exitOK, code)
		require.NotContains(t, stderr, "progress:", "nothing to do, nothing shown %v", more)
	}
}
