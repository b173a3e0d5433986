package config

import (
	"bytes"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// yamlLine is the "line N: " a yaml.v3 syntax error starts with.
var yamlLine = regexp.MustCompile(`^line (\d+): `)

// syntaxError returns msg (a trimmed yaml.v3 syntax error) with the line
// where the problem is. yaml.v3 names the line of the enclosing block
// ("line 1: did not find expected '-' indicator" for a bad indent on line
// 3), so the first prefix of the file that fails to parse finds the line
// to fix. Line-wise prefixes of a block-style file are themselves valid
// YAML up to the bad line.
func syntaxError(data []byte, msg string) string {
	if !yamlLine.MatchString(msg) {
		return msg
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		if err := yaml.Unmarshal(bytes.Join(lines[:k], nil), &n); err != nil {
			return yamlLine.ReplaceAllString(msg, fmt.Sprintf("line %d: ", k))
		}
	}
	return msg
}
