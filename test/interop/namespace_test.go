package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/nodetest"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/stack"
)

// Tables in LanceDB namespaces (the manifest layout, lance-namespace's
// catalog spec V2) as the npm client 0.39 writes them: nested namespaces,
// a table in each, histories, a namespaced table dropped. Then reaper
// lists exactly the tables LanceDB lists under every namespace (and no
// more), a pass cleans the namespaces its configuration turns retention on
// for and leaves the others, and LanceDB still lists every namespace and
// table and reads every version left. A writer creating and dropping
// tables (committing to the catalog) while passes run leaves the catalog
// untouched by reaper and every table listed. The file-for-file comparison
// with the client's own cleanup on tables in namespaces is the namespaced
// run of Lance's cleanup tests (lance_cleanup_test.go).

func TestNamespacesLocal(t *testing.T) {
	t.Parallel()
	runNamespaces(t, newLocal(t))
}

func TestNamespacesS3(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting the S3 server when LanceDB is missing
	runNamespaces(t, newS3(t))
}

// tableRef is one table of the driver: its namespace path and name.
type tableRef struct {
	Namespace []string `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	Versions  int      `json:"versions,omitempty"`
}

func (r tableRef) id() string { return strings.Join(append(slices.Clone(r.Namespace), r.Name), "$") }

// nsListing is the driver's list answer: what LanceDB lists.
type nsListing struct {
	Namespaces []string `json:"namespaces"`
	Tables     []string `json:"tables"`
}

// nsVerified is the driver's verify answer.
type nsVerified struct {
	Tables []struct {
		ID       string `json:"id"`
		Versions []struct {
			Version int    `json:"version"`
			Rows    int    `json:"rows"`
			Error   string `json:"error"`
		} `json:"versions"`
	} `json:"tables"`
}

// nodeEnv is the environment a LanceDB process needs on b beyond the
// connection's storage options: the 0.39 client opens a namespaced table
// without them, so an S3 endpoint reaches it through AWS_* too.
func nodeEnv(b backend) []string {
	var env []string
	for k, v := range b.lanceOptions() {
		env = append(env, strings.ToUpper(k)+"="+v)
		if k == "allow_http" {
			env = append(env, "AWS_ALLOW_HTTP="+v)
		}
	}
	sort.Strings(env)
	return env
}

// nsDriver is one js/namespaces.mjs server on a root.
type nsDriver struct {
	p *nodetest.Process
	b backend
}

func startNSDriver(t *testing.T, b backend) *nsDriver {
	return &nsDriver{p: nodetest.StartEnv(t, requireNode(t), jsScript(t, "namespaces.mjs"), nodeEnv(b)...), b: b}
}

func (d *nsDriver) call(t *testing.T, cmd string, req map[string]any, out any) {
	t.Helper()
	req["cmd"], req["uri"], req["storageOptions"] = cmd, d.b.uri(), d.b.lanceOptions()
	require.NoError(t, d.p.Call(cmd, req, out))
}

func (d *nsDriver) list(t *testing.T) nsListing {
	var l nsListing
	d.call(t, "list", map[string]any{}, &l)
	return l
}

// verify checks that LanceDB opens every version of every table it lists
// and returns the versions of each.
func (d *nsDriver) verify(t *testing.T, tables []tableRef) map[string][]int {
	var v nsVerified
	d.call(t, "verify", map[string]any{"tables": tables}, &v)
	out := map[string][]int{}
	for _, tb := range v.Tables {
		for _, ver := range tb.Versions {
			require.Empty(t, ver.Error, "%s: version %d does not read", tb.ID, ver.Version)
			require.Positive(t, ver.Rows, "%s: version %d", tb.ID, ver.Version)
			out[tb.ID] = append(out[tb.ID], ver.Version)
		}
	}
	return out
}

// reaperTables are the names `reaper status -o json` lists as tables
// (state exists), and the states of everything else.
func reaperTables(t *testing.T, c *cli) (tables []string, others map[string]string) {
	out, code := c.run(t, "status", "-o", "json")
	require.Equal(t, 0, code, out)
	var st []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Location string `json:"location"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	others = map[string]string{}
	for _, s := range st {
		if s.State == "exists" {
			tables = append(tables, s.Name)
		} else {
			others[s.Name] = s.State
		}
	}
	sort.Strings(tables)
	return tables, others
}

// catalogKeys are the keys under __manifest/, the namespace catalog, read
// through reaper's store (which lists a local directory as LanceDB writes
// and renames its temporary files in it; a bare walk fails on one that
// vanished between readdir and lstat).
func catalogKeys(t *testing.T, b backend) []string {
	ctx := context.Background()
	store, err := stack.Open(ctx, b.uri(), b.lanceOptions(), stack.Options{})
	require.NoError(t, err)
	var keys []string
	for attempt := 0; ; attempt++ {
		keys = keys[:0]
		err := store.Walk(ctx, "__manifest/", func(objs []objstore.Object) error {
			for _, o := range objs {
				keys = append(keys, o.Key)
			}
			return nil
		})
		if err == nil || attempt == 2 {
			require.NoError(t, err)
			break
		}
	}
	sort.Strings(keys)
	return keys
}

func runNamespaces(t *testing.T, b backend) {
	d := startNSDriver(t, b)
	c := &cli{bin: reaperBin(t), b: b}
	tables := []tableRef{
		{Name: "top", Versions: 4},
		{Namespace: []string{"tenant_a"}, Name: "inner", Versions: 6},
		{Namespace: []string{"tenant_a", "sub"}, Name: "deep", Versions: 5},
		{Namespace: []string{"tenant_b"}, Name: "t1", Versions: 4},
		{Namespace: []string{"tenant_b"}, Name: "t2", Versions: 3},
		{Namespace: []string{"staging"}, Name: "kept", Versions: 4},
		{Namespace: []string{"staging"}, Name: "gone", Versions: 3},
	}
	d.call(t, "setup", map[string]any{"tables": tables, "drops": []tableRef{{Namespace: []string{"staging"}, Name: "gone"}}}, &struct{}{})
	tables = slices.DeleteFunc(tables, func(r tableRef) bool { return r.Name == "gone" })
	lanceSaw := d.list(t)
	require.Equal(t, []string{"staging", "tenant_a", "tenant_a$sub", "tenant_b"}, lanceSaw.Namespaces)
	var want []string
	for _, r := range tables {
		want = append(want, r.id())
	}
	sort.Strings(want)
	require.Equal(t, want, lanceSaw.Tables, "what LanceDB lists")

	// reaper lists exactly what LanceDB lists, under every namespace.
	got, others := reaperTables(t, c)
	require.Equal(t, lanceSaw.Tables, got, "reaper status lists the tables LanceDB lists")
	require.Empty(t, others, "nothing else is reported (the dropped table's directory is gone)")
	out, code := c.run(t, "status", "--versions")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^__manifest\s+namespace_catalog\s+-\s+-\s+-\s+\d+\s`, out, "status --versions shows the catalog's versions")
	versionsBefore := d.verify(t, tables)
	catalogBefore := catalogKeys(t, b)

	// A pass with the root's retention off, on for tenant_*, off for
	// staging: the tenants' tables keep their newest version only.
	// Every version older than older_than (1s) by the store's clock, which
	// an S3 server gives to the second.
	time.Sleep(2500 * time.Millisecond)
	cfg := filepath.Join(t.TempDir(), "reaper.yaml")
	opts, _ := json.Marshal(b.lanceOptions())
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`safety:
  allow_short_ttl: true
roots:
  - uri: %q
    storage_options: %s
    retention:
      enabled: false
      older_than: 1s
      namespaces:
        - match: staging
          enabled: false
        - match: "tenant_*"
          enabled: true
`, b.uri(), opts)), 0o600))
	out, code = c.exec(t, "retain", "--config", cfg, "-o", "json")
	require.Equal(t, 0, code, out)
	var rep struct {
		Tables []struct {
			Name     string `json:"name"`
			Location string `json:"location"`
			Result   string `json:"result"`
			Versions int    `json:"versions_deleted"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	cleaned := map[string]int{}
	for _, r := range rep.Tables {
		require.Equal(t, "cleaned", r.Result, r.Name)
		require.Contains(t, r.Location, "_"+r.Name+"/")
		cleaned[r.Name] = r.Versions
	}
	require.Equal(t, map[string]int{"tenant_a$inner": 5, "tenant_a$sub$deep": 4, "tenant_b$t1": 3, "tenant_b$t2": 2}, cleaned)

	// LanceDB lists every namespace and table, reads every version left;
	// staging and the root table kept every version.
	require.Equal(t, lanceSaw, d.list(t))
	after := d.verify(t, tables)
	for _, r := range tables {
		if cleaned[r.id()] > 0 {
			require.Equal(t, versionsBefore[r.id()][len(versionsBefore[r.id()])-1:], after[r.id()], r.id())
		} else {
			require.Equal(t, versionsBefore[r.id()], after[r.id()], "%s: retention off", r.id())
		}
	}
	require.Equal(t, catalogBefore, catalogKeys(t, b), "the catalog is never touched")

	// A writer creating and dropping tables in a namespace (a commit to
	// the catalog each) while passes run: nothing of the catalog goes,
	// and LanceDB lists every table afterwards.
	w := startNSDriver(t, b)
	var wg sync.WaitGroup
	var churned struct {
		Created int    `json:"created"`
		Kept    string `json:"kept"`
	}
	wg.Go(func() {
		w.call(t, "churn", map[string]any{"namespace": []string{"tenant_a"}, "count": 12}, &churned)
	})
	passes := 0
	for done := false; !done; passes++ {
		done = waitTimeout(&wg, 0)
		before := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
		out, code := c.run(t, "retain", "--before", before, "--allow-short-ttl", "-o", "json")
		// A table the writer drops between the listing and its read fails
		// that pass's read (exit 1); nothing is deleted for it.
		require.Contains(t, []int{0, 1}, code, out)
		catalog := catalogKeys(t, b)
		for _, k := range catalogBefore {
			require.Contains(t, catalog, k, "pass %d: the catalog lost %s", passes, k)
		}
	}
	wg.Wait()
	require.Equal(t, 12, churned.Created)
	t.Logf("namespaces: %d passes beside a writer that created and dropped %d tables", passes, churned.Created)
	final := d.list(t)
	require.Equal(t, lanceSaw.Namespaces, final.Namespaces)
	require.Equal(t, sortedCopy(append(slices.Clone(lanceSaw.Tables), churned.Kept)), final.Tables)
	kept := append(slices.Clone(tables), tableRef{Namespace: []string{"tenant_a"}, Name: strings.TrimPrefix(churned.Kept, "tenant_a$")})
	d.verify(t, kept)
	got, others = reaperTables(t, c)
	require.Equal(t, final.Tables, got, "reaper lists what LanceDB lists after the writer")
	require.Empty(t, others)
}

// waitTimeout reports whether wg is done within d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}
