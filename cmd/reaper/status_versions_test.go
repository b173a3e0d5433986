package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// statusVersionsRoot is a root with a table LanceDB wrote, one reaper
// refuses (managed blobs) and a soft-deleted one, and a cutoff that
// removes the LanceDB table's first versions.
func statusVersionsRoot(t *testing.T) (root, before string) {
	root = t.TempDir()
	copyLanceTable(t, root, "events")
	copyLanceTable(t, root, "blobs")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "blobs.lance", "_blobs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "blobs.lance", "_blobs", "x"), []byte("x"), 0o644))
	copyLanceTable(t, root, "gone")
	require.NoError(t, os.WriteFile(filepath.Join(root, "gone.deleted"), lifecycle.EncodeMarker(time.Now(), 7*24*time.Hour), 0o644))
	// A minute ahead: the tables were written now, and a version goes only
	// when the store wrote it before the cutoff too.
	return root, time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
}

// `reaper status --versions` shows, for each live table, its versions and
// the versions and bytes `reaper retain` with the same policy would
// remove (those of its dry run), says why a table retain refuses is
// unsupported, and leaves the columns empty for a soft-deleted table.
func TestStatusVersions(t *testing.T) {
	root, before := statusVersionsRoot(t)
	code, out, stderr := run(t, "retain", "--root", root, "--before", before, "--allow-short-ttl", "--dry-run", "-o", "json", "events")
	require.Equal(t, exitOK, code, stderr)
	var plan struct {
		Tables []retainJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Tables, 1)
	want := plan.Tables[0]
	require.Equal(t, "planned", want.Result)
	require.NotEmpty(t, want.Removed)

	code, out, stderr = run(t, "status", "--root", root, "--versions", "--before", before)
	require.Equal(t, exitOK, code, stderr)
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	require.Equal(t, []string{"NAME", "STATE", "DELETED_AT", "TTL", "PURGE_AFTER", "VERSIONS", "SIZE", "REMOVABLE", "RECLAIMABLE", "NOTE"}, rows["NAME"])
	size := tableBytes(t, root, "events")
	cells := []string{"events", "exists", "-", "-", "-", strconv.Itoa(want.Versions)}
	cells = append(cells, strings.Fields(humanBytes(size))...)
	cells = append(cells, strconv.Itoa(len(want.Removed)))
	cells = append(cells, strings.Fields(humanBytes(want.Bytes)+share(want.Bytes, size))...)
	require.Equal(t, append(cells, "-"), rows["events"], out)
	require.Regexp(t, `\(\d+%\)`, share(want.Bytes, size), "the share of the table retention would reclaim")
	require.Equal(t, []string{"blobs", "exists", "-", "-", "-", "-", "-", "-", "-", "retention", "unsupported:"}, rows["blobs"][:11], out)
	require.Contains(t, out, "managed blob file _blobs/x")
	require.Equal(t, []string{"-", "-", "-", "-"}, rows["gone"][5:9], out)
	// A cutoff a minute ahead: retain refuses it below safety.min_ttl, and
	// status says so rather than show what retain would never do.
	require.Equal(t, "retain --before "+before+" would remove "+strconv.Itoa(len(want.Removed))+" versions, "+humanBytes(want.Bytes)+
		" of "+humanBytes(size)+share(want.Bytes, size)+" from 1 live tables; 1 unsupported; retain would refuse it: before "+before+
		" is in the future by the store's clock (", lines[len(lines)-1][:strings.Index(lines[len(lines)-1], "clock (")+len("clock (")])
	require.True(t, strings.HasSuffix(lines[len(lines)-1], "below safety.min_ttl 1h0m0s: every version but the newest would go; pass --allow-short-ttl to retain with it anyway"), lines[len(lines)-1])
	t.Setenv("REAPER_SAFETY_ALLOW_SHORT_TTL", "true")
	code, out, stderr = run(t, "status", "--root", root, "--versions", "--before", before)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "; before "+before+" is in the future by the store's clock (", "with short TTLs allowed retain would run it: status still says it is in the future")
	require.NoError(t, os.Unsetenv("REAPER_SAFETY_ALLOW_SHORT_TTL"))

	code, out, stderr = run(t, "status", "--root", root, "--versions", "--before", before, "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	var js []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &js))
	require.Len(t, js, 3)
	byName := map[string]map[string]any{}
	for _, e := range js {
		byName[e["name"].(string)] = e
	}
	require.Equal(t, float64(want.Versions), byName["events"]["versions"])
	require.Equal(t, float64(len(want.Removed)), byName["events"]["reclaimable_versions"])
	require.Equal(t, float64(want.Bytes), byName["events"]["reclaimable_bytes"])
	require.Equal(t, float64(size), byName["events"]["table_bytes"])
	require.Equal(t, percent(want.Bytes, size), byName["events"]["reclaimable_percent"])
	require.Equal(t, "retain --before "+before, byName["events"]["retention_policy"])
	require.Contains(t, stderr, "reaper: warning: retain --before "+before+": retain would refuse it: before "+before+" is in the future")
	require.Equal(t, "planned", byName["events"]["retention"])
	require.Nil(t, byName["events"]["retention_reason"])
	require.Equal(t, "unsupported", byName["blobs"]["retention"])
	require.Contains(t, byName["blobs"]["retention_reason"], "managed blob file _blobs/x")
	require.Nil(t, byName["blobs"]["reclaimable_bytes"])
	for _, k := range []string{"versions", "table_bytes", "reclaimable_versions", "reclaimable_bytes", "reclaimable_percent", "retention", "retention_reason", "retention_policy"} {
		v, ok := byName["gone"][k]
		require.True(t, ok, "every element has %s", k)
		require.Nil(t, v, "%s of a soft-deleted table", k)
	}

	// Without --versions status reads no manifest and its output keeps its
	// keys; the policy flags alone are a usage error.
	code, out, _ = run(t, "status", "--root", root, "-o", "json")
	require.Equal(t, exitOK, code)
	require.NotContains(t, out, "reclaimable")
	code, _, stderr = run(t, "status", "--root", root, "--older-than", "1d")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "reaper: status: --older-than, --before, --keep-versions, --delete-unverified and --unverified-after go with --versions, which shows what that retain would remove", lastLine(stderr))
}

// --versions without --older-than or --before counts what LanceDB's
// optimize() default, 7 days by the store's clock, would remove: at a
// store clock 8 days ahead, what retain --before a day ahead removes.
func TestStatusVersionsDefaultPolicy(t *testing.T) {
	root := t.TempDir()
	copyLanceTable(t, root, "events")
	now := time.Now().Add(8 * 24 * time.Hour)
	o := statusOptions{storeOptions: storeOptions{globalOptions: quiet(), Root: root}, Versions: true}
	clock := objstoretest.NewClock()
	o.setClock(clock, now)
	var out strings.Builder
	require.NoError(t, runStatus(context.Background(), o, &out))

	ro := retainOptions{storeOptions: o.storeOptions, DryRun: true, Output: formatJSON}
	ro.Before, ro.KeepVersions = now.Add(-7*24*time.Hour).UTC().Format(time.RFC3339Nano), 1
	ro.setClock(clock, now)
	var plan strings.Builder
	require.NoError(t, runRetain(context.Background(), ro, &plan))
	var p struct {
		Tables []retainJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(plan.String()), &p))
	require.NotEmpty(t, p.Tables[0].Removed)
	size := tableBytes(t, root, "events")
	require.Contains(t, out.String(), fmt.Sprintf("retain --older-than 7d would remove %d versions, %s of %s%s from 1 live tables; "+
		"--older-than 7d is status's default, as LanceDB's optimize(): pass --older-than or --before for another cutoff\n",
		len(p.Tables[0].Removed), humanBytes(p.Tables[0].Bytes), humanBytes(size), share(p.Tables[0].Bytes, size)))
	o.OlderThan = 0
	o.Output = formatJSON
	out.Reset()
	require.NoError(t, runStatus(context.Background(), o, &out))
	require.Contains(t, out.String(), `"retention_policy": "retain --older-than 7d (status's default, as LanceDB's optimize())"`)
}

// tableBytes is the size of every file of a local table's directories
// Lance's cleanup manages: what status --versions calls its size.
func tableBytes(t *testing.T, root, name string) int64 {
	t.Helper()
	var n int64
	for _, dir := range []string{"_versions", "_transactions", "data", "_indices", "_deletions"} {
		err := filepath.WalkDir(filepath.Join(root, name+".lance", dir), func(_ string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			n += info.Size()
			return err
		})
		if !os.IsNotExist(err) {
			require.NoError(t, err)
		}
	}
	return n
}
