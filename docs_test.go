package reaper_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
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

// The README's first screen is what a newcomer reads: what reaper is,
// whether today's LanceDB needs it, and how to start. These keep it so.
const (
	// readmeMaxBytes keeps the README a README; the details live in docs/.
	readmeMaxBytes = 15 * 1024
	// firstScreen is how many lines a terminal or a repository page shows
	// before scrolling.
	firstScreen = 30
)

// TestReadmeFirstScreen: the first code block's commands are make targets
// the Makefile has, and the first screen names LanceDB and heads the
// section on what today's LanceDB does with markers.
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	require.Less(t, len(b), readmeMaxBytes, "README.md is %d bytes: move details to docs/", len(b))
	lines := strings.Split(string(b), "\n")
	mk, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	var block []string
	for i, in := 0, false; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			if in {
				break
			}
			in = true
			continue
		}
		if in {
			block = append(block, lines[i])
		}
	}
	var targets []string
	for _, l := range block {
		f := strings.Fields(l)
		require.GreaterOrEqual(t, len(f), 2, "README's first block: %q", l)
		require.Equal(t, "make", f[0], "README's first block runs make: %q", l)
		require.Regexp(t, `(?m)^`+f[1]+`:`, string(mk), "README runs make %s: the Makefile has no such target", f[1])
		targets = append(targets, f[1])
	}
	require.Equal(t, []string{"run", "test"}, targets)
	screen := strings.Join(lines[:min(firstScreen, len(lines))], "\n")
	require.Contains(t, screen, "LanceDB")
	require.Contains(t, screen, "\n## LanceDB and the markers today\n", "the first screen says what today's LanceDB does with markers")
}

// TestReadmeLinksResolve: every relative link of the README names a file
// of the repository.
func TestReadmeLinksResolve(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	links := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, links)
	for _, m := range links {
		if strings.Contains(m[1], "://") {
			continue
		}
		_, err := os.Stat(m[1])
		require.NoError(t, err, "README links %s", m[1])
	}
}
