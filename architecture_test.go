package reaper_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// backendDocs are the files that list every backend's forms by hand:
// TestDocsNameEveryBackend reads the first three, deploy/'s kustomize test
// keeps the fourth equal to the third, and each backend has its section in
// the last.
var backendDocs = []string{"reaper.go", "README.md", "config/reaper.yaml", "deploy/kubernetes/base/reaper.yaml", "docs/BACKENDS.md"}

// docs/ARCHITECTURE.md says which existing files a new backend touches. The
// files that name every bucket backend by hand (an import of each backend
// package but the local disk's, outside those packages) and backendDocs are
// what it must name, and its count must be theirs.
func TestArchitectureCountsABackendsFiles(t *testing.T) {
	b, err := os.ReadFile("docs/ARCHITECTURE.md")
	require.NoError(t, err)
	page := string(b)
	start, end := strings.Index(page, "**A new storage backend**"), strings.Index(page, "**A new safety rail**")
	require.True(t, start >= 0 && end > start, "docs/ARCHITECTURE.md has no backend section before the rail section")
	section := strings.Join(strings.Fields(page[start:end]), " ")

	backends := bucketBackends(t)
	require.GreaterOrEqual(t, len(backends), 3, "bucket backends found: %v", backends)
	want := append(namingEveryBackend(t, backends), backendDocs...)
	for _, f := range want {
		_, err := os.Stat(f)
		require.NoError(t, err)
		require.Contains(t, section, "`"+f+"`", "docs/ARCHITECTURE.md's backend section does not name %s, which names every backend", f)
	}
	m := regexp.MustCompile(`Edited, (\d+) existing files`).FindStringSubmatch(section)
	require.NotNil(t, m, "the backend section says how many existing files are edited (\"Edited, N existing files\")")
	n, _ := strconv.Atoi(m[1])
	require.Equal(t, len(want), n, "files a new backend edits: %v", want)
}

// bucketBackends are the import paths of the backend packages (a
// backend.go declaring Backend()) but the local disk's, which many
// packages import for its own sake.
func bucketBackends(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("internal/objstore/*/backend.go")
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dir := filepath.ToSlash(filepath.Dir(f))
		if strings.Contains(string(b), "func Backend() objstore.Backend") && dir != "internal/objstore/local" {
			out = append(out, "github.com/lance-reaper/reaper/"+dir)
		}
	}
	return out
}

// namingEveryBackend lists the Go files of the module, outside the backend
// packages, that import every one of backends.
func namingEveryBackend(t *testing.T, backends []string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".tools", "bin", "var", "testdata", "deploy":
				return filepath.SkipDir
			}
			return nil
		}
		p = filepath.ToSlash(p)
		if path.Ext(p) != ".go" {
			return nil
		}
		for _, b := range backends {
			if strings.HasPrefix("github.com/lance-reaper/reaper/"+p, b+"/") {
				return nil
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		var imports []string
		for _, imp := range f.Imports {
			v, _ := strconv.Unquote(imp.Path.Value)
			imports = append(imports, v)
		}
		for _, b := range backends {
			if !slices.Contains(imports, b) {
				return nil
			}
		}
		out = append(out, p)
		return nil
	})
	require.NoError(t, err)
	return out
}
