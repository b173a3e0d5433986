package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The key layout of a root is lifecycle's (names.go, hold_format.go): every
// other production file asks it for keys (lifecycle.MarkerKey, TableDir,
// TableSuffix, PauseKey...) instead of spelling a suffix, so a layout change
// is one edit. This test finds string literals that spell a suffix as a key
// part. Tests, test-support packages and the end-to-end suites may spell
// them: there the literal is the assertion.

// keyParts are the spellings a literal may not end with.
var keyParts = []string{
	".lance", ".lance/", ".deleted", ".reaper-lock", ".reaper-purge", ".reaper-hold", ".reaper-retain",
	"_reaper/PAUSE", "_reaper/PAUSE/",
}

// keyOwners may spell them.
var keyOwners = map[string]bool{
	"internal/lifecycle/names.go":       true,
	"internal/lifecycle/hold_format.go": true,
}

// keyExceptions are literals that look like a key part but are not one.
var keyExceptions = map[string]string{
	"cmd/reaper/cmd_demo.go\x00.lance":       "a data fragment's file extension (\"data/\"+uuid+\".lance\"), not the table suffix",
	"internal/faketable/random.go\x00.lance": "a data fragment's file extension (\"data/\"+hex+\".lance\"), not the table suffix",
}

// skipDirs hold tests and test support, which may spell key parts.
var skipDirs = map[string]bool{"test": true, "objstoretest": true, "clocktest": true, "lancetest": true, "testdata": true}

func TestKeyPartsAreSpelledByTheirOwner(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var found []string
	err = walkSources(root, skipDirs, func(path string) error {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if keyOwners[rel] {
			return nil
		}
		for _, lit := range keyLiterals(t, path) {
			if _, ok := keyExceptions[rel+"\x00"+lit.value]; !ok {
				found = append(found, rel+":"+strconv.Itoa(lit.line)+": "+strconv.Quote(lit.value))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "spell these with lifecycle's names (names.go)")
}

type literal struct {
	value string
	line  int
}

// keyLiterals returns the string literals in file that end with a key part.
func keyLiterals(t *testing.T, file string) []literal {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		if strings.HasPrefix(v, "data/") || strings.Contains(v, "/data/") {
			return true // a data fragment (data/<uuid>.lance), not a table
		}
		for _, part := range keyParts {
			if strings.HasSuffix(v, part) {
				out = append(out, literal{v, fset.Position(lit.Pos()).Line})
				break
			}
		}
		return true
	})
	return out
}
