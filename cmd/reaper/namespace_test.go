package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore/local"
)

// namespacedRoot is a root as LanceDB writes it with namespaces: a root
// table, tables in tenant_a and tenant_a/sub, the catalog.
func namespacedRoot(t *testing.T) string {
	root := t.TempDir()
	st, err := local.Open(root)
	require.NoError(t, err)
	for _, dir := range []string{"top.lance/", "76cba2fc_tenant_a$inner/", "f9500c33_tenant_a$sub$deep/", "__manifest/"} {
		lancetest.LanceDB(t, st, dir)
	}
	return root
}

// status shows a table in a namespace by its object id (JSON adds its
// namespace and directory), --versions shows the catalog's versions, and
// retain, hold and release take the object id or --namespace.
func TestNamespacedTablesOnTheCommandLine(t *testing.T) {
	root := namespacedRoot(t)
	code, out, stderr := run(t, "status", "--root", root)
	require.Equal(t, exitOK, code, stderr)
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		names = append(names, strings.Fields(l)[0])
	}
	require.ElementsMatch(t, []string{"top", "tenant_a$inner", "tenant_a$sub$deep"}, names)

	code, out, stderr = run(t, "status", "--root", root, "-o", "json", "--namespace", "tenant_a/sub", "deep")
	require.Equal(t, exitOK, code, stderr)
	var js []statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &js))
	require.Equal(t, []statusJSON{{Name: "tenant_a$sub$deep", State: "exists", Namespace: []string{"tenant_a", "sub"}, Location: "f9500c33_tenant_a$sub$deep/"}}, js)

	code, out, stderr = run(t, "status", "--root", root, "--versions")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `(?m)^__manifest\s+namespace_catalog\s+-\s+-\s+-\s+6\s+-\s+-\s+-\s+LanceDB's namespace catalog`, out)
	require.Contains(t, out, "from 3 live tables", "the catalog is not a table")

	before := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	code, _, stderr = run(t, "hold", "--root", root, "--reason", "case 1", "tenant_a$inner")
	require.Equal(t, exitOK, code, stderr)
	require.FileExists(t, filepath.Join(root, "76cba2fc_tenant_a$inner.reaper-hold"))
	code, _, stderr = run(t, "release", "--root", root, "--namespace", "tenant_a", "inner")
	require.Equal(t, exitOK, code, stderr)
	code, out, stderr = run(t, "retain", "--root", root, "--before", before, "--allow-short-ttl", "--keep-versions", "2", "-o", "json", "--namespace", "tenant_a", "inner")
	require.Equal(t, exitOK, code, stderr)
	var res struct {
		Tables []retainRunJSON `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Tables, 1)
	require.Equal(t, "tenant_a$inner", res.Tables[0].Name)
	require.Equal(t, "76cba2fc_tenant_a$inner/", res.Tables[0].Location)
	require.Equal(t, "cleaned", res.Tables[0].Result)
	_, err := os.Stat(filepath.Join(root, "76cba2fc_tenant_a$inner", "_versions"))
	require.NoError(t, err)
}

// Drop, revive and purge refuse a table in a namespace, by object id or by
// --namespace, in one line that says why, before touching anything.
func TestNamespacedTablesAreNotDropped(t *testing.T) {
	root := namespacedRoot(t)
	for _, args := range [][]string{
		{"drop", "tenant_a$inner"},
		{"drop", "--namespace", "tenant_a", "inner"},
		{"revive", "--namespace", "tenant_a/sub", "deep"},
		{"purge", "tenant_a$inner"},
	} {
		code, out, stderr := run(t, append([]string{args[0], "--root", root}, args[1:]...)...)
		require.Equal(t, exitUsage, code, "%v: %s", args, out)
		require.Regexp(t, `^reaper: \w+ "tenant_a\$(inner|sub\$deep)": a table in a namespace: drop, revive and purge are for root tables .*Lance's soft delete is V1-only`, lastLine(stderr))
	}
	code, _, stderr := run(t, "status", "--root", root, "--namespace", "tenant_a", "x$y")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "pass the table's own name")
	_, err := os.Stat(filepath.Join(root, "76cba2fc_tenant_a$inner.deleted"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
