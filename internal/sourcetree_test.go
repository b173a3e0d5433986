package internal_test

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// walkSources calls fn for every file of the module's source tree under
// root: it does not enter hidden directories (.git, .tools), node_modules,
// or what builds and runs leave behind (bin, var), nor the directories skip
// names.
func walkSources(root string, skip map[string]bool, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return fn(path)
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "var" || name == "bin" || skip[name]) {
			return filepath.SkipDir
		}
		return nil
	})
}
