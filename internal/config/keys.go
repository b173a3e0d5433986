package config

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// field is one yaml key of Config, found by reflection over the yaml tags.
type field struct {
	key   string // dotted yaml path; list elements are "roots.uri"
	index []int  // reflect.Value.FieldByIndex path (not valid below a list)
	typ   reflect.Type
	// scalar: settable from one string by Set and REAPER_* variables.
	scalar bool
}

var (
	fieldsOnce sync.Once
	allFields  []field
	byKey      map[string]field
)

var (
	durationType = reflect.TypeFor[Duration]()
	boolPtrType  = reflect.TypeFor[*bool]()
)

func fields() ([]field, map[string]field) {
	fieldsOnce.Do(func() {
		allFields = walkFields(reflect.TypeFor[Config](), "", nil, true)
		byKey = make(map[string]field, len(allFields))
		for _, f := range allFields {
			byKey[f.key] = f
		}
	})
	return allFields, byKey
}

// walkFields lists every yaml key below t. Keys below a list are recorded
// (for the documentation test) but are not scalar: one string cannot set them.
func walkFields(t reflect.Type, prefix string, index []int, settable bool) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name := yamlName(sf)
		if name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		idx := append(slices.Clone(index), i)
		ft := sf.Type
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, field{key: key, index: idx, typ: ft})
			out = append(out, walkFields(ft, key, idx, settable)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, field{key: key, index: idx, typ: ft})
			out = append(out, walkFields(ft.Elem(), key, nil, false)...)
		default:
			out = append(out, field{key: key, index: idx, typ: ft, scalar: settable && isScalar(ft)})
		}
	}
	return out
}

func yamlName(sf reflect.StructField) string {
	if !sf.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func isScalar(t reflect.Type) bool {
	if t == durationType || t == boolPtrType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return true
	}
	return false
}

// Keys lists every yaml key of Config as a dotted path, in declaration
// order; keys of list elements are written "roots.uri".
func Keys() []string {
	fs, _ := fields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

// ScalarKeys lists the keys Set and REAPER_* variables accept.
func ScalarKeys() []string {
	fs, _ := fields()
	var out []string
	for _, f := range fs {
		if f.scalar {
			out = append(out, f.key)
		}
	}
	return out
}

// EnvName is the environment variable for a dotted key:
// "limits.table_concurrency" -> "REAPER_LIMITS_TABLE_CONCURRENCY".
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// closest returns the candidate nearest to s by edit distance, or "" when
// none is near enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len(s)/3) {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// didYouMean formats a suggestion suffix, or the accepted list when no
// candidate is close.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return "; did you mean " + c + "?"
	}
	return "; accepted: " + strings.Join(candidates, ", ")
}
