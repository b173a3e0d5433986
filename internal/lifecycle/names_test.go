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
