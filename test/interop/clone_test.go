package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/nodetest"
	"github.com/lance-reaper/reaper/internal/roots"
)

// cloneVersions is verify's answer: every version of each table and the
// rows it reads.
type cloneVersions struct {
	Tables map[string][]struct {
		Version int    `json:"version"`
		Rows    int    `json:"rows"`
		Error   string `json:"error"`
	} `json:"tables"`
}

// A shallow clone (LanceDB's cloneTable, its default) of an old version of
// a table reads the source's files through a base path. Version retention
// of the source keeps every file the clone reads (Lance's own cleanup
// deletes them and the clone's versions no longer read), says so in its
// plan, and never touches the clone (unsupported: its files are not its
// own): a pass (reaper retain) from what it read of every table, a run of
// the source alone (Namespace.Retain) by reading the root's other tables.
func TestRetentionKeepsWhatAShallowCloneReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    func(t *testing.T) backend
	}{
		{"local", func(t *testing.T) backend { return newLocal(t) }},
		{"s3", func(t *testing.T) backend { return newS3(t) }},
	} {
		t.Run(tc.name+"/go", func(t *testing.T) {
			b, verify := cloneRoot(t, tc.b(t))
			before := verify()
			ns, err := reaper.Open(context.Background(), b.uri(), reaper.Options{StorageOptions: b.lanceOptions()})
			require.NoError(t, err)
			res, err := ns.Retain(context.Background(), "src", reaper.RetainOptions{AllowShortTTL: true,
				Policy: reaper.RetentionPolicy{Before: time.Now().Add(time.Minute)}})
			require.NoError(t, err)
			require.Equal(t, reaper.RetainCleaned, res.Outcome)
			requireCloneReads(t, before, verify())
		})
		t.Run(tc.name+"/cli", func(t *testing.T) {
			b, verify := cloneRoot(t, tc.b(t))
			before := verify()
			c := cli{bin: reaperBin(t), b: b}
			cutoff := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
			out, code := c.run(t, "retain", "--before", cutoff, "--allow-short-ttl", "--dry-run", "-o", "json")
			require.Equal(t, 0, code, out)
			plan := cloneReport(t, out)
			results := map[string]string{}
			for _, tb := range plan.Tables {
				results[tb.Name] = tb.Result
				if tb.Name == "src" {
					require.Positive(t, tb.KeptForOthers, "the plan says what it keeps for the clone")
					require.Equal(t, "copy", tb.KeptFor)
				}
			}
			require.Equal(t, map[string]string{"src": "planned", "copy": "unsupported"}, results)
			out, code = c.run(t, "retain", "--before", cutoff, "--allow-short-ttl", "-o", "json")
			require.Equal(t, 0, code, out)
			for _, tb := range cloneReport(t, out).Tables {
				results[tb.Name] = tb.Result
			}
			require.Equal(t, map[string]string{"src": "cleaned", "copy": "unsupported"}, results)
			requireCloneReads(t, before, verify())
		})
		t.Run(tc.name+"/shards", func(t *testing.T) {
			// The source and its clone in two replicas' shares
			// (shard.by table): the source's replica still keeps what the
			// clone reads, which it knows only by reading the clone too.
			b, verify := cloneRoot(t, tc.b(t))
			before := verify()
			n := 2
			for roots.TableOwner(b.uri(), "src", n) == roots.TableOwner(b.uri(), "copy", n) {
				n++
			}
			c := cli{bin: reaperBin(t), b: b}
			cutoff := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
			results := map[string][]string{}
			for i := range n {
				out, code := c.run(t, "retain", "--before", cutoff, "--allow-short-ttl", "--shard", fmt.Sprintf("%d/%d:table", i, n), "-o", "json")
				require.Equal(t, 0, code, out)
				for _, tb := range cloneReport(t, out).Tables {
					require.Equal(t, i, roots.TableOwner(b.uri(), tb.Name, n), "replica %d of %d reported %s", i, n, tb.Name)
					results[tb.Name] = append(results[tb.Name], tb.Result)
				}
			}
			require.Equal(t, map[string][]string{"src": {"cleaned"}, "copy": {"unsupported"}}, results)
			requireCloneReads(t, before, verify())
		})
	}
}

// cloneRoot has the client write "src" and its shallow clone "copy" on b
// (js/clone.mjs) and returns b and a verify that opens every version of
// both and reads its rows; the clone reads before anything is cleaned.
func cloneRoot(t *testing.T, b backend) (backend, func() cloneVersions) {
	t.Helper()
	node := requireNode(t)
	for k, v := range b.lanceOptions() {
		// cloneTable opens the source without the connection's storage
		// options (as the client opens namespaced tables): the AWS_*
		// environment reaches it.
		t.Setenv(strings.ToUpper(k), v)
	}
	p := nodetest.Start(t, node, jsScript(t, "clone.mjs"))
	req := map[string]any{"cmd": "setup", "uri": b.uri(), "storageOptions": b.lanceOptions(),
		"source": strings.TrimSuffix(b.uri(), "/") + "/src.lance"}
	var setup struct {
		Src int `json:"src_versions"`
	}
	require.NoError(t, p.Call("setup", req, &setup))
	require.Greater(t, setup.Src, 3)
	verify := func() cloneVersions {
		t.Helper()
		var v cloneVersions
		req["cmd"] = "verify"
		require.NoError(t, p.Call("verify", req, &v))
		return v
	}
	for _, v := range verify().Tables["copy"] {
		require.Empty(t, v.Error, "the clone reads before retention")
	}
	return b, verify
}

// requireCloneReads: the source kept its newest version alone, and every
// version of the clone reads the rows it read before.
func requireCloneReads(t *testing.T, before, after cloneVersions) {
	t.Helper()
	require.Len(t, after.Tables["src"], 1, "the source keeps its newest version")
	require.Equal(t, before.Tables["copy"], after.Tables["copy"], "every version of the clone still reads its rows")
}

// cloneReport is retain's JSON, the fields the clone test reads.
type cloneReportJSON struct {
	Tables []struct {
		Name          string `json:"name"`
		Result        string `json:"result"`
		KeptForOthers int    `json:"kept_for_others"`
		KeptFor       string `json:"kept_for"`
	} `json:"tables"`
}

func cloneReport(t *testing.T, out string) cloneReportJSON {
	t.Helper()
	var r cloneReportJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}
