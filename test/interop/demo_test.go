package interop

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDemoRootOpensInLanceDB: the root `reaper demo` (make run) leaves
// behind is a LanceDB database: the real client lists the tables the purge
// kept, staging_import among them (dropped, not due: today's LanceDB does
// not read markers), and opens and counts each.
func TestDemoRootOpensInLanceDB(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	dir := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(reaperBin(t), "demo", "--dir", dir)
	cmd.Env = hermeticEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reaper demo: %v\n%s", err, out)
	}
	db := newLanceDB(t, node, filepath.Join(dir, "db"), nil)
	want := []string{"customers", "orders", "staging_import"}
	ops := []op{opNames()}
	for _, name := range want {
		ops = append(ops, opOpen(name))
	}
	res := db.run(t, ops...)
	names := decode[[]string](t, res[0])
	if len(names) != len(want) {
		t.Fatalf("LanceDB lists %v, want %v", names, want)
	}
	for i, name := range want {
		if names[i] != name {
			t.Fatalf("LanceDB lists %v, want %v", names, want)
		}
		if o := decode[openResult](t, res[i+1]); !o.OK {
			t.Errorf("LanceDB cannot open %s: %s", name, o.Error)
		}
	}
}
