package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeFile reads the YAML file at path over c. Unknown keys are errors
// that name the file, the line, the full key and the closest known key.
func decodeFile(path string, c *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %s", path, syntaxError(data, trimYAML(err).Error()))
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s: line %d: want a mapping of keys (schedule: ..., roots: ...), not a %s", path, root.Line, kindName(root.Kind))
	}
	lines := map[int]string{}
	if errs := checkKeys(root, reflect.TypeFor[Config](), "", lines); len(errs) > 0 {
		for i, e := range errs {
			errs[i] = fmt.Errorf("config file %s: %w", path, e)
		}
		return errors.Join(errs...)
	}
	if indexNode(root) {
		c.Shard.indexSet = true
	}

	// The key walk above explains unknown keys; KnownFields keeps the
	// decoder itself strict as well.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config file %s: %w", path, nameKeys(trimYAML(err), lines))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: holds more than one YAML document; keep one (remove the extra \"---\")", path)
	}
	return nil
}

// checkKeys reports every mapping key in n that t has no yaml field for.
// lines maps the line of each scalar value to its key, so decoder errors
// ("line 7: cannot unmarshal ...") can name the key.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string, lines map[int]string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		var errs []error
		for i, item := range n.Content {
			errs = append(errs, checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i), lines)...)
		}
		return errs
	case t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return nil // scalars, maps and type mismatches: the decoder reports those
	}
	known := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "" {
			known[name] = t.Field(i).Type
			names = append(names, name)
		}
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := k.Value
		if prefix != "" {
			full = prefix + "." + k.Value
		}
		ft, ok := known[k.Value]
		if !ok {
			where := "at the top level"
			if prefix != "" {
				where = "in " + prefix
			}
			errs = append(errs, fmt.Errorf("line %d: unknown key %q %s%s", k.Line, full, where, didYouMean(k.Value, names)))
			continue
		}
		if v.Kind == yaml.ScalarNode {
			lines[v.Line] = full
		}
		errs = append(errs, checkKeys(v, ft, full, lines)...)
	}
	return errs
}

// indexNode reports whether the file sets shard.index to a value.
func indexNode(root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "shard" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		m := root.Content[i+1]
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == "index" {
				return m.Content[j+1].Tag != "!!null" // "index:" left empty is unset
			}
		}
	}
	return false
}

var lineRE = regexp.MustCompile(`line (\d+): `)

// nameKeys adds the key after each "line N: " of a decoder error.
func nameKeys(err error, lines map[int]string) error {
	msg := lineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(lineRE.FindStringSubmatch(m)[1])
		if k, ok := lines[n]; ok {
			return m + k + ": "
		}
		return m
	})
	return errors.New(msg)
}

// trimYAML drops yaml.v3's "yaml: " and "unmarshal errors:" boilerplate.
func trimYAML(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	return errors.New(msg)
}
