package faketable

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape Shape
		want  []string
	}{
		{"empty", Shape{}, nil},
		{"latest only", Shape{Latest: true}, []string{"_latest.manifest"}},
		{"every kind, one index file per directory", Shape{Latest: true, Manifests: 2, Transactions: 2, Deletions: 1, Indices: 2, Data: 2}, []string{
			"_latest.manifest",
			"_versions/1.manifest", "_versions/2.manifest",
			"_transactions/0-a1b2c3d4.txn", "_transactions/1-a1b2c3d5.txn",
			"_deletions/0-1-0.arrow",
			"_indices/0c2f3e9a-1111-2222-3333-444455556666/index.idx",
			"_indices/0c2f3e9a-1111-2222-3333-444455556667/index.idx",
			"data/000000-0a1b.lance", "data/000001-0a1b.lance",
		}},
		{"IndexFiles 1 is one file per directory", Shape{Indices: 1, IndexFiles: 1}, []string{
			"_indices/0c2f3e9a-1111-2222-3333-444455556666/index.idx",
		}},
		{"index files in parts, the last directory takes the rest", Shape{Indices: 5, IndexFiles: 2}, []string{
			"_indices/0c2f3e9a-1111-2222-3333-444455556666/part-0.idx",
			"_indices/0c2f3e9a-1111-2222-3333-444455556666/part-1.idx",
			"_indices/0c2f3e9a-1111-2222-3333-444455556667/part-0.idx",
			"_indices/0c2f3e9a-1111-2222-3333-444455556667/part-1.idx",
			"_indices/0c2f3e9a-1111-2222-3333-444455556668/part-0.idx",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, slices.Collect(tc.shape.Keys()))
			require.Equal(t, len(tc.want), tc.shape.Len())
		})
	}
}

func TestKeysStopsWhenTheLoopBreaks(t *testing.T) {
	var got []string
	for rel := range (Shape{Manifests: 3, Data: 3}).Keys() {
		got = append(got, rel)
		if len(got) == 4 {
			break
		}
	}
	require.Equal(t, []string{"_versions/1.manifest", "_versions/2.manifest", "_versions/3.manifest", "data/000000-0a1b.lance"}, got)
}

func TestFiles(t *testing.T) {
	s := Shape{Latest: true, Manifests: 1, Indices: 1, Data: 2, DataBytes: 1000}
	files := s.Files()
	require.ElementsMatch(t, slices.Collect(s.Keys()), slices.Collect(maps.Keys(files)))
	for rel, body := range files {
		if strings.HasPrefix(rel, "data/") {
			require.Len(t, body, 1000, "data file %s is padded", rel)
			require.True(t, strings.HasPrefix(string(body), string(Body(rel))), "data file %s starts with its body", rel)
		} else {
			require.Equal(t, Body(rel), body, "only data files are padded: %s", rel)
		}
	}
	require.Equal(t, []byte("payload of data/000000-0a1b.lance"), Shape{Data: 1}.Files()["data/000000-0a1b.lance"], "no DataBytes: the bare body")
}

// TestSpread holds Spread to the object and directory counts the bench's
// fixtures were measured with (BENCHMARKS.md).
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		n                                            int
		manifests, txns, deletions, indexFiles, data int
		dirs                                         int // directories holding files
	}{
		{0, 0, 0, 0, 0, 0, 0},
		{1, 1, 0, 0, 0, 0, 1},
		{10, 1, 0, 0, 0, 9, 2},
		{19, 1, 0, 0, 0, 18, 2},
		{20, 2, 2, 1, 1, 14, 5},
		{200, 20, 20, 10, 10, 140, 5},
		{2500, 250, 250, 125, 125, 1750, 6},
		{10_000, 1000, 1000, 500, 500, 7000, 9},
		{1_000_000, 100_000, 100_000, 50_000, 50_000, 700_000, 504},
	} {
		s := Spread(tc.n)
		require.Equal(t, tc.n, s.Len(), "n=%d", tc.n)
		count := map[string]int{}
		dirs := map[string]bool{}
		seen := map[string]bool{}
		for rel := range s.Keys() {
			require.False(t, seen[rel], "n=%d: duplicate key %s", tc.n, rel)
			seen[rel] = true
			count[strings.SplitN(rel, "/", 2)[0]]++
			dirs[path.Dir(rel)] = true
		}
		require.Len(t, seen, tc.n, "n=%d", tc.n)
		want := map[string]int{"_versions": tc.manifests, "_transactions": tc.txns, "_deletions": tc.deletions, "_indices": tc.indexFiles, "data": tc.data}
		maps.DeleteFunc(want, func(_ string, v int) bool { return v == 0 })
		require.Equal(t, want, count, "n=%d: files per directory", tc.n)
		require.Len(t, dirs, tc.dirs, "n=%d: directories", tc.n)
	}
}
