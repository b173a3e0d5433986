package lance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

func openLocal(t *testing.T, root string) objstore.Store {
	t.Helper()
	s, err := local.Open(root)
	require.NoError(t, err)
	return s
}

// TestReadFixture reads the table LanceDB 0.39 wrote and checks every fact
// the plan relies on against what the client did (testdata README).
func TestReadFixture(t *testing.T) {
	root := copyFixture(t)
	tb, err := ReadTable(context.Background(), openLocal(t, root), "t.lance/")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "t.lance"), tb.URI)

	var numbers []uint64
	for i, v := range tb.Versions {
		numbers = append(numbers, v.Number)
		require.Equal(t, VersionsDir+ManifestName(SchemeV2, v.Number), v.Key)
		require.Empty(t, v.Branch)
		if i > 0 {
			require.True(t, v.Timestamp.After(tb.Versions[i-1].Timestamp), "timestamps grow with versions")
		}
		keys, _ := v.Refs()
		require.Contains(t, keys, TransactionsDir+v.TransactionFile, "every version names its transaction file")
	}
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, numbers)
	require.Equal(t, uint64(6), tb.Latest().Number)
	require.Empty(t, tb.Detached)
	require.Equal(t, []Tag{{Name: "release", Version: 2}}, tb.Tags)

	v3keys, v3idx := tb.Versions[2].Refs()
	require.Empty(t, v3idx, "version 3 predates the index")
	require.True(t, slices.ContainsFunc(v3keys, func(k string) bool {
		return strings.HasPrefix(k, DeletionsDir+"0-2-") && strings.HasSuffix(k, ".arrow")
	}),
		"version 3's delete wrote _deletions/{fragment 0}-{read version 2}-{id}.arrow: %v", v3keys)
	_, v4idx := tb.Versions[3].Refs()
	require.Len(t, v4idx, 1)
	require.True(t, hasObject(tb, IndicesDir+v4idx[0]+"/bitmap_page_lookup.lance"), "the index uuid names its directory")
	v6keys, _ := tb.Versions[5].Refs()
	v2keys, _ := tb.Versions[1].Refs()
	require.Subset(t, v6keys, v2keys[:len(v2keys)-1], "a restore of version 2 references its data files")

	require.Len(t, tb.Branches, 1)
	b := tb.Branches[0]
	require.Equal(t, "dev", b.Name)
	require.Equal(t, uint64(5), b.RootVersion)
	require.Equal(t, uint64(5), b.ParentVersion)
	require.Len(t, b.Versions, 2)
	mainKeys, mainIdx := tb.MainRefs(b.Versions[0])
	v5keys, v5idx := tb.Versions[4].Refs()
	require.Subset(t, v5keys, mainKeys, "the branch references main's files of its root version")
	require.Equal(t, v5idx, mainIdx)
	for _, k := range append(v5keys, mainKeys...) {
		require.True(t, hasObject(tb, k), "%s is listed", k)
	}
	for _, o := range tb.Objects {
		require.False(t, strings.HasPrefix(o.Key, "tree/") || strings.HasPrefix(o.Key, "_refs/"), "only managed directories are listed: %s", o.Key)
	}
}

// TestReadOnMemoryStore: the reader needs only the Store contract.
func TestReadOnMemoryStore(t *testing.T) {
	root := copyFixture(t)
	mem := memstore.New()
	ctx := context.Background()
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		_, err = mem.Put(ctx, filepath.ToSlash(rel), body)
		return err
	}))
	tb, err := ReadTable(ctx, mem, "t.lance/")
	// The branch names main by its local path, which a memory store is not.
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, ue.Reason, "outside the table")
	require.Nil(t, tb)
	require.NoError(t, mem.Delete(ctx, "t.lance/_refs/branches/dev.json"))
	tb, err = ReadTable(ctx, mem, "t.lance/")
	require.NoError(t, err)
	require.Len(t, tb.Versions, 6)
}

// TestVersionsKeptCompact: a version of main read by ReadTable (or
// carried over by Refresh) keeps what it references, not its manifest's
// file lists, and references exactly what its manifest says.
func TestVersionsKeptCompact(t *testing.T) {
	root := copyFixture(t)
	store := openLocal(t, root)
	tb, err := ReadTable(context.Background(), store, "t.lance/")
	require.NoError(t, err)
	fresh, err := tb.Refresh(context.Background(), store)
	require.NoError(t, err)
	for _, read := range []*Table{tb, fresh} {
		for _, v := range read.Versions {
			require.Nil(t, v.Fragments, "version %d keeps its fragment list", v.Number)
			body, err := os.ReadFile(filepath.Join(root, "t.lance", filepath.FromSlash(v.Key)))
			require.NoError(t, err)
			m, err := DecodeManifestFile(body)
			require.NoError(t, err)
			wantKeys, wantIdx := Version{Manifest: m}.Refs()
			require.NotEmpty(t, wantKeys)
			keys, idx := v.Refs()
			require.Equal(t, wantKeys, keys, "version %d", v.Number)
			require.Equal(t, wantIdx, idx, "version %d", v.Number)
			require.Equal(t, m.Timestamp, v.Timestamp)
		}
	}
	require.NotNil(t, tb.Branches[0].Versions[0].Fragments, "a branch's versions are read whole (MainRefs)")
}

func hasObject(tb *Table, key string) bool {
	return slices.ContainsFunc(tb.Objects, func(o objstore.Object) bool { return o.Key == key })
}

// latestManifest is the path of the fixture copy's newest manifest.
func latestManifest(root string) string {
	return filepath.Join(root, "t.lance", "_versions", ManifestName(SchemeV2, 6))
}

func editFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, fn(body), 0o644))
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

// TestRefusals: each hand-altered copy of the fixture makes the table
// unsupported, naming why; nothing of it can be planned (no table is
// returned).
func TestRefusals(t *testing.T) {
	v6 := func(root string) string { return latestManifest(root) }
	editMsg := func(edit func(t *testing.T, msg []byte) []byte) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			editFile(t, v6(root), func(b []byte) []byte {
				return editManifest(t, b, func(msg []byte) []byte { return edit(t, msg) })
			})
		}
	}
	for _, tc := range []struct {
		name  string
		alter func(t *testing.T, root string)
		dir   string
		want  string
	}{
		{"unknown reader feature flag", editMsg(func(t *testing.T, m []byte) []byte { return setVarint(t, m, 9, FlagDeletionFiles|1<<9) }),
			"", "unknown reader feature flag(s) 0x200"},
		{"reserved bit 8 is unknown", editMsg(func(t *testing.T, m []byte) []byte { return setVarint(t, m, 9, 1<<8) }),
			"", "unknown reader feature flag(s) 0x100"},
		{"unknown writer feature flag", editMsg(func(t *testing.T, m []byte) []byte { return setVarint(t, m, 10, 1<<12) }),
			"", "unknown writer feature flag(s) 0x1000"},
		{"truncated manifest", func(t *testing.T, root string) {
			editFile(t, v6(root), func(b []byte) []byte { return b[:len(b)-3] })
		}, "", "footer magic"},
		{"manifest length disagrees with the footer", func(t *testing.T, root string) {
			editFile(t, v6(root), func(b []byte) []byte {
				return append(b[:len(b)-footerLen:len(b)-footerLen], append([]byte{0}, b[len(b)-footerLen:]...)...)
			})
		}, "", "but the footer starts"},
		{"footer version", func(t *testing.T, root string) {
			editFile(t, v6(root), func(b []byte) []byte { b[len(b)-6] = 3; return b })
		}, "", "footer version 0.3"},
		{"unknown field in a fragment", editMsg(func(t *testing.T, m []byte) []byte {
			return editFragments(t, m, func(f []byte) []byte {
				return protowire.AppendVarint(protowire.AppendTag(f, 99, protowire.VarintType), 1)
			})
		}), "", "DataFragment has field 99"},
		{"data file under a base path", editMsg(func(t *testing.T, m []byte) []byte {
			return editFragments(t, m, func(f []byte) []byte {
				return mapFields(t, f, func(g field, raw []byte) []byte {
					if g.num != 2 {
						return raw
					}
					return appendBytes(nil, 2, setVarint(t, g.b, 7, 0))
				})
			})
		}), "", "is under base path 0"},
		{"base path in main", editMsg(func(t *testing.T, m []byte) []byte {
			bp := appendBytes(protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1), 4, []byte("s3://elsewhere/t.lance"))
			return appendBytes(m, 18, bp)
		}), "", "has base paths (s3://elsewhere/t.lance)"},
		{"unknown deletion file type", func(t *testing.T, root string) {
			v3 := filepath.Join(root, "t.lance", "_versions", ManifestName(SchemeV2, 3))
			editFile(t, v3, func(b []byte) []byte {
				return editManifest(t, b, func(m []byte) []byte {
					return editFragments(t, m, func(f []byte) []byte {
						return mapFields(t, f, func(g field, raw []byte) []byte {
							if g.num != 3 {
								return raw
							}
							return appendBytes(nil, 3, setVarint(t, g.b, 1, 2))
						})
					})
				})
			})
		}, "", "DeletionFile type 2"},
		{"blob column in the schema", editMsg(func(t *testing.T, m []byte) []byte {
			entry := appendBytes(appendBytes(nil, 1, []byte("lance-encoding:blob")), 2, []byte("true"))
			return appendBytes(m, 1, appendBytes(appendBytes(nil, 2, []byte("payload")), 10, entry))
		}), "", "blob column"},
		{"managed blob files", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_blobs", "x.blob"), "b")
		}, "", "managed blob file _blobs/x.blob"},
		{"blob sidecar in data", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "data", "abc", "0.blob"), "b")
		}, "", "data/abc/0.blob is in a subdirectory"},
		{"a subdirectory of _versions that is not .tmp*", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_versions", "old", "1.manifest"), "x")
		}, "", "_versions/old/1.manifest: _versions/ holds a subdirectory"},
		{"unknown name in _versions", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_versions", "6.manifest.bak"), "x")
		}, "", "_versions/6.manifest.bak: not a manifest name"},
		{"two manifests of one version", func(t *testing.T, root string) {
			body, err := os.ReadFile(v6(root))
			require.NoError(t, err)
			writeFile(t, filepath.Join(root, "t.lance", "_versions", "6.manifest"), string(body))
		}, "", "version 6 has two manifests"},
		{"manifest holding another version", func(t *testing.T, root string) {
			require.NoError(t, os.Rename(v6(root), filepath.Join(root, "t.lance", "_versions", ManifestName(SchemeV2, 7))))
		}, "", "holds version 6"},
		{"no versions", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "t.lance", "_versions")))
		}, "", "no versions"},
		{"branch outside the table", func(t *testing.T, root string) {
			for _, n := range []uint64{5, 6} {
				p := filepath.Join(root, "t.lance", "tree", "dev", "_versions", ManifestName(SchemeV2, n))
				editFile(t, p, func(b []byte) []byte {
					return editManifest(t, b, func(m []byte) []byte { return setBasePath(t, m, fixtureWrittenAt) })
				})
			}
		}, "", "is outside the table"},
		{"branch without an identifier", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_refs", "branches", "dev.json"), `{"parentBranch":null,"parentVersion":5,"createAt":1,"manifestSize":1}`)
		}, "", "no identifier"},
		{"unreadable tag", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_refs", "tags", "bad.json"), `{"version":`)
		}, "", "_refs/tags/bad.json"},
		{"tag with a negative version", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", "_refs", "tags", "bad.json"), `{"branch":null,"version":-1}`)
		}, "", "not a non-negative integer"},
		{"the namespace's own table", func(t *testing.T, root string) {
			require.NoError(t, os.Rename(filepath.Join(root, "t.lance"), filepath.Join(root, "__manifest")))
		}, "__manifest/", "never touched"},
		{"deregistered from its namespace", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "t.lance", ".lance-deregistered"), "")
		}, "", "deregistered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyFixture(t)
			tc.alter(t, root)
			dir := tc.dir
			if dir == "" {
				dir = "t.lance/"
			}
			tb, err := ReadTable(context.Background(), openLocal(t, root), dir)
			require.ErrorIs(t, err, ErrUnsupported)
			var ue *UnsupportedError
			require.True(t, errors.As(err, &ue))
			require.Equal(t, dir, ue.Dir)
			require.Contains(t, ue.Reason, tc.want)
			require.Nil(t, tb, "nothing of an unsupported table can be planned")
		})
	}
}

// TestTolerated: what Lance itself leaves in _versions/ and _refs/ is not
// a reason to refuse.
func TestTolerated(t *testing.T) {
	root := copyFixture(t)
	dir := filepath.Join(root, "t.lance")
	writeFile(t, filepath.Join(dir, "_versions", ".tmp_7.manifest_9c100374-3298-4537-afc6-f5ee7913666d"), "partial")
	writeFile(t, filepath.Join(dir, "_versions", ManifestName(SchemeV2, 7)+"-9c100374-3298-4537-afc6-f5ee7913666d"), "staged")
	// Lance's cleanup deletes everything under _versions/.tmp* as a
	// temporary manifest, in a directory too (cleanup.rs,
	// cleanup_preserves_unmanaged_dirs_and_files).
	writeFile(t, filepath.Join(dir, "_versions", ".tmp", "orphan"), "tmp")
	writeFile(t, filepath.Join(dir, "_versions", ".tmp_x", "a", "b"), "tmp")
	writeFile(t, filepath.Join(dir, "_refs", "tags", "notes.txt"), "not a tag")
	body, err := os.ReadFile(filepath.Join(dir, "_versions", ManifestName(SchemeV2, 4)))
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "_versions", "d9223372036854775812.manifest"), string(body))
	tb, err := ReadTable(context.Background(), openLocal(t, root), "t.lance/")
	require.NoError(t, err)
	require.Len(t, tb.Versions, 6)
	require.Len(t, tb.Detached, 1, "a detached version is read (its files are kept)")
	require.Len(t, tb.Tags, 1)
	var temps []string
	for _, o := range tb.Objects {
		if strings.HasPrefix(o.Key, "_versions/.tmp") {
			temps = append(temps, o.Key)
		}
	}
	require.ElementsMatch(t, []string{"_versions/.tmp/orphan", "_versions/.tmp_x/a/b",
		"_versions/.tmp_7.manifest_9c100374-3298-4537-afc6-f5ee7913666d"}, temps, "listed, for the plan to judge as unverified")
}

func TestVersionName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   nameKind
		n      uint64
		scheme Scheme
	}{
		{"5.manifest", nameVersion, 5, SchemeV1},
		{"18446744073709551610.manifest", nameVersion, 5, SchemeV2},
		{"00000000000000000001.manifest", nameVersion, math.MaxUint64 - 1, SchemeV2},
		{"d12.manifest", nameDetached, 12, SchemeV2},
		{"latest_version_hint.json", nameHint, 0, 0},
		{".tmp_7.manifest_9c10", nameTemp, 0, 0},
		// A local writer's manifest in flight (object_store's staged
		// upload), found by the retention chaos suite.
		{"18446744073709551523.manifest#1", nameTemp, 0, 0},
		{"5.manifest#12", nameTemp, 0, 0},
		{"5.manifest#", nameUnknown, 0, 0},
		{"5.manifest#x", nameUnknown, 0, 0},
		{"18446744073709551610.manifest-9c100374", nameStaging, 0, 0},
		{"5.manifest.bak", nameUnknown, 0, 0},
		{"x5.manifest", nameUnknown, 0, 0},
		{"5.txn", nameUnknown, 0, 0},
		{"manifest", nameUnknown, 0, 0},
		{"99999999999999999999.manifest", nameUnknown, 0, 0},
	} {
		kind, n, scheme := versionName(tc.name)
		require.Equal(t, tc.kind, kind, tc.name)
		require.Equal(t, tc.n, n, tc.name)
		require.Equal(t, tc.scheme, scheme, tc.name)
	}
	require.Equal(t, "18446744073709551610.manifest", ManifestName(SchemeV2, 5))
	require.Equal(t, "5.manifest", ManifestName(SchemeV1, 5))
}

func TestGetCap(t *testing.T) {
	mem := memstore.New()
	ctx := context.Background()
	_, err := mem.Put(ctx, "t.lance/_versions/1.manifest", make([]byte, 100))
	require.NoError(t, err)
	_, err = get(ctx, mem, "t.lance/_versions/1.manifest", 99)
	var fe *formatError
	require.ErrorAs(t, err, &fe)
	require.Contains(t, err.Error(), "t.lance/_versions/1.manifest is larger than the reader's cap of 99 bytes")
	body, err := get(ctx, mem, "t.lance/_versions/1.manifest", 100)
	require.NoError(t, err)
	require.Len(t, body, 100)
	_, err = get(ctx, mem, "t.lance/_versions/2.manifest", 100)
	require.ErrorIs(t, err, objstore.ErrNotFound)
}

// goneOnce answers "not found" to the first read of key, as a store does
// when a writer's cleanup or a rename removed the manifest between the
// listing and the read.
type goneOnce struct {
	objstore.Store
	key  string
	gone bool
}

func (g *goneOnce) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if key == g.key && !g.gone {
		g.gone = true
		return nil, objstore.Object{}, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	return g.Store.Get(ctx, key, limit)
}

// A manifest gone between the listing and its read (the table changed
// while it was read) makes the reader list and read the table again, not
// fail it: a plan made outside the lease reads tables other processes
// clean.
func TestReadTableReadsAgainAfterAManifestVanished(t *testing.T) {
	root := copyFixture(t)
	st, err := local.Open(root)
	require.NoError(t, err)
	ctx := context.Background()
	tb, err := ReadTable(ctx, st, "t.lance/")
	require.NoError(t, err)
	g := &goneOnce{Store: st, key: "t.lance/" + tb.Versions[2].Key}
	again, err := ReadTable(ctx, g, "t.lance/")
	require.NoError(t, err)
	require.True(t, g.gone, "the first read was refused")
	require.Len(t, again.Versions, len(tb.Versions))
	g.gone = false
	again, err = again.Refresh(ctx, g)
	require.NoError(t, err)
	require.Len(t, again.Versions, len(tb.Versions))
}
