package reaper_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// The docs that list root forms or storage options by hand (Go doc read by
// embedders, README and the example configuration) name everything the backend registry holds: a backend added to
// all.Default() fails this test until they say so. (The CLI's help is
// rendered from the registry: cmd/reaper/storehelp_test.go.)
func TestDocsNameEveryBackend(t *testing.T) {
	reg := all.Default()
	var syntaxes, prefixes, optionPrefixes, options []string
	for _, b := range reg.Backends() {
		for _, f := range b.Forms {
			syntaxes, prefixes = append(syntaxes, f.Syntax), append(prefixes, f.Prefix)
			if len(b.Options) > 0 {
				optionPrefixes = append(optionPrefixes, f.Prefix)
			}
		}
		for _, o := range all.CanonicalOptions(b) {
			options = append(options, o.Name)
		}
	}
	pkg, open, storageOptions := reaperDocs(t)
	for _, tc := range []struct {
		where, text string
		want        []string
	}{
		{"reaper.go: the package doc", pkg, prefixes},
		{"reaper.go: Open", open, syntaxes},
		{"reaper.go: Options.StorageOptions", storageOptions, append(optionPrefixes, options...)},
		{"README.md: Root URIs", paragraph(t, "README.md", "Root URIs:"), syntaxes},
		{"config/reaper.yaml: roots", paragraph(t, "config/reaper.yaml", "# Database roots:"), syntaxes},
	} {
		text := strings.Join(strings.Fields(tc.text), " ")
		for _, w := range tc.want {
			require.Contains(t, text, w, "%s does not name %s", tc.where, w)
		}
	}
}

// reaperDocs reads reaper.go's package doc, Open's doc and the doc of
// Options.StorageOptions.
func reaperDocs(t *testing.T) (pkg, open, storageOptions string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reaper.go", nil, parser.ParseComments)
	require.NoError(t, err)
	pkg = f.Doc.Text()
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == "Open" && d.Recv == nil {
				open = d.Doc.Text()
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != "Options" {
					continue
				}
				for _, field := range ts.Type.(*ast.StructType).Fields.List {
					if len(field.Names) == 1 && field.Names[0].Name == "StorageOptions" {
						storageOptions = field.Doc.Text()
					}
				}
			}
		}
	}
	require.NotEmpty(t, pkg)
	require.NotEmpty(t, open, "func Open")
	require.NotEmpty(t, storageOptions, "Options.StorageOptions")
	return pkg, open, storageOptions
}

// paragraph is the paragraph of file (up to a blank line) that begins
// with the line starting with start.
func paragraph(t *testing.T, file, start string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "\n"+start)
	require.GreaterOrEqual(t, i, 0, "%s: no line starts with %q", file, start)
	s = s[i+1:]
	if end := strings.Index(s, "\n\n"); end >= 0 {
		s = s[:end]
	}
	return s
}
