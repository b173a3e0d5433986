package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"t", "my_table", "a-b", "events.2024", "foo.deleted", "x.lance", "__manifest", "UPPER9"} {
		require.NoError(t, ValidateName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "/abs", `a\b`, "a\x00b", "dir/"} {
		err := ValidateName(bad)
		require.ErrorIs(t, err, ErrInvalidName, "%q", bad)
	}
}

func TestKeyLayout(t *testing.T) {
	require.Equal(t, "foo.deleted.lance/", TableDir("foo.deleted"))
	require.Equal(t, "foo.deleted.deleted", MarkerKey("foo.deleted"))
	require.Equal(t, "foo.deleted.reaper-lock", LockKey("foo.deleted"))
	require.True(t, IsLockKey("root/t.reaper-lock"))
	require.False(t, IsLockKey("root/t.lance/data/x.reaper-lock/y"))
}

func TestTableDirIn(t *testing.T) {
	for _, tc := range []struct {
		path, seg string
	}{
		{"db/ledger", ""},
		{"db/t.lance/ledger", "t.lance"},
		{"bucket/a.lance", "a.lance"},
		{"db/t.lancer/x", ""},
		{"", ""},
	} {
		seg, in := TableDirIn(tc.path)
		require.Equal(t, tc.seg, seg, tc.path)
		require.Equal(t, tc.seg != "", in, tc.path)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		key  string
		name string
		kind entryKind
	}{
		{"t.deleted", "t", entryMarker},
		{"foo.deleted.deleted", "foo.deleted", entryMarker},
		{"a.b.c.deleted", "a.b.c", entryMarker},
		{"t.reaper-lock", "t", entryLock},
		{"x.reaper-lock.reaper-lock", "x.reaper-lock", entryLock},
		{".deleted", "", entryOther},
		{"t.lance", "t", entryNotTable}, // an object (a symlink, a file), not a table dir
		{"t.reaper-purge", "t", entryCommit},
		{"README", "", entryOther},
		{"t.deleted.tmp", "", entryOther},
	} {
		name, kind := classifyObject(tc.key)
		require.Equal(t, tc.kind, kind, tc.key)
		require.Equal(t, tc.name, name, tc.key)
	}
	for _, tc := range []struct {
		prefix string
		name   string
		kind   entryKind
	}{
		{"t.lance/", "t", entryTable},
		{"events.2024.lance/", "events.2024", entryTable},
		{"foo.deleted.lance/", "foo.deleted", entryTable},
		{"x.lance.lance/", "x.lance", entryTable},
		{"__manifest/", "", entryOther},
		{"_reaper/", "", entryOther},
		{"t.reaper-hold/", "t", entryHold},
		{"a.b.reaper-hold/", "a.b", entryHold},
		{"t.reaper-hold.lance/", "t.reaper-hold", entryTable},
		{".reaper-hold/", "", entryOther},
		{".lance/", "", entryOther},
		{"0a1b2c3d_ns$tbl/", "", entryOther},
	} {
		name, kind := classifyPrefix(tc.prefix)
		require.Equal(t, tc.kind, kind, tc.prefix)
		require.Equal(t, tc.name, name, tc.prefix)
	}
}

func TestIsManifest(t *testing.T) {
	for rel, want := range map[string]bool{
		"_versions/1.manifest":                       true,
		"_versions/18446744073709551614.manifest":    true,
		"_versions/latest_version_hint.json":         true,
		"tree/dev/_versions/3.manifest":              true,
		"data/abc.lance":                             false,
		"_transactions/0-x.txn":                      false,
		"_indices/u/_versions_not_really":            false,
		"_deletions/0-1-2.arrow":                     false,
		"data/_versions/looks-like-but-is-not.lance": false,
	} {
		require.Equal(t, want, isManifest(rel), rel)
	}
}

// A namespaced table is named by its directory; its control objects sit
// beside the directory at the root, never inside it.
func TestNamespacedKeyLayout(t *testing.T) {
	name := "76cba2fc_tenant_a$inner/"
	require.True(t, IsNamespaced(name))
	require.NoError(t, ValidateName(name))
	require.Equal(t, name, TableDir(name))
	require.Equal(t, "76cba2fc_tenant_a$inner.reaper-lock", LockKey(name))
	require.Equal(t, "76cba2fc_tenant_a$inner.reaper-retain", RetainKey(name))
	require.Equal(t, "76cba2fc_tenant_a$inner.reaper-hold", HoldKey(name))
	require.Equal(t, "76cba2fc_tenant_a$inner.deleted", MarkerKey(name))
	require.Equal(t, "76cba2fc_tenant_a$inner", tablePath(name))
	require.Equal(t, "tenant_a$inner", ObjectID(name))
	require.Equal(t, "tenant_a$inner", DisplayName(name))
	require.Equal(t, "__manifest", DisplayName(CatalogDir+"/"))
	require.Equal(t, "t", ObjectID("t"))
	nsPath, table := SplitObjectID("tenant_a$sub$deep")
	require.Equal(t, []string{"tenant_a", "sub"}, nsPath)
	require.Equal(t, "deep", table)
	require.Equal(t, "tenant_a$sub$deep", JoinObjectID(nsPath, table))
	nsPath, table = SplitObjectID("top")
	require.Empty(t, nsPath)
	require.Equal(t, "top", table)

	for _, not := range []string{"76cba2fc_tenant_a$inner", "76cba2f_x/", "76cba2fg_x/", "76CBA2FC_x/", "76cba2fc_/", "76cba2fc-x/", "dir/", "__manifest/", "76cba2fc_a/b/"} {
		require.False(t, IsNamespaced(not), not)
	}
	require.True(t, IsObjectID("tenant_a$inner"))
	require.False(t, IsObjectID("top"))
	require.ErrorIs(t, RootTableOnly("drop", name), ErrNamespaced)
	require.ErrorIs(t, RootTableOnly("drop", "tenant_a$inner"), ErrNamespaced)
	require.NoError(t, RootTableOnly("drop", "top"))
	require.ErrorIs(t, ValidateNewName("tenant_a$inner"), ErrNamespaced)

	for dir, want := range map[string]string{"t.lance": "t", "76cba2fc_tenant_a$inner": name, "__manifest": "", "backup": ""} {
		got, ok := NameOfDir(dir)
		require.Equal(t, want, got, dir)
		require.Equal(t, want != "", ok, dir)
	}
	for _, tc := range []struct {
		prefix, name string
		kind         entryKind
	}{
		{"76cba2fc_tenant_a$inner/", "76cba2fc_tenant_a$inner", entryNamespaced},
		{"__manifest/", "__manifest", entryCatalog},
		{"t.lance/", "t", entryTable},
		{"backup/", "", entryOther},
	} {
		n, kind := classifyRootPrefix(tc.prefix)
		require.Equal(t, tc.kind, kind, tc.prefix)
		require.Equal(t, tc.name, n, tc.prefix)
	}
	// The listing passes a manifest-layout stem's directory after its
	// control objects.
	require.Equal(t, "76cba2fc_tenant_a$inner/", lastKey("76cba2fc_tenant_a$inner"))
	require.Equal(t, "t.reaper-retain", lastKey("t"))
	require.Equal(t, "76cba2fc_tenant_a$inner.reaper-retain", lastControlKey(name))
}
