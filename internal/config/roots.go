package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// DiscoverParent returns the directory a discover pattern lists: the
// pattern without its last segment, which must be exactly "*"
// ("s3://bucket/tenants/*/" -> s3://bucket/tenants, "/data/*" -> /data).
func DiscoverParent(pattern string) (objstore.Location, error) {
	trimmed := strings.TrimSuffix(pattern, "/")
	parent, ok := strings.CutSuffix(trimmed, "/*")
	switch {
	case !ok:
		return objstore.Location{}, fmt.Errorf("discover pattern %q: the last path segment must be exactly \"*\" (e.g. s3://bucket/tenants/*/ or /data/*/)", pattern)
	case strings.Contains(parent, "*"):
		return objstore.Location{}, fmt.Errorf("discover pattern %q: only the last path segment may be \"*\"", pattern)
	case parent == "" || parent == "file://":
		parent += "/"
	}
	loc, err := objstore.ParseLocation(parent)
	if err != nil {
		return objstore.Location{}, fmt.Errorf("discover pattern %q: %w", pattern, err)
	}
	return loc, nil
}

func (c Config) validateRoots(v *validator) {
	seen := map[string]string{}
	for i, r := range c.Roots {
		key := fmt.Sprintf("roots[%d]", i)
		loc, err := objstore.ParseLocation(r.URI)
		if err != nil {
			v.add(key+".uri", r.URI, err.Error(), "fix the URI")
			continue
		}
		if strings.Contains(r.URI, "*") {
			v.add(key+".uri", r.URI, `contains "*"`, "move patterns to discover")
		}
		if prev, dup := seen[loc.String()]; dup {
			v.add(key+".uri", r.URI, "same root as "+prev, "list each root once")
		}
		seen[loc.String()] = key
		checkStorageOptions(v, key+".storage_options", loc, r.StorageOptions)
	}
	for i, d := range c.Discover {
		key := fmt.Sprintf("discover[%d]", i)
		loc, err := DiscoverParent(d.URI)
		if err != nil {
			v.add(key+".uri", d.URI, err.Error(), "write the parent URI followed by /*/")
			continue
		}
		checkStorageOptions(v, key+".storage_options", loc, d.StorageOptions)
	}
}

// checkStorageOptions validates options with the rules the location's
// backend declares (package all); a scheme that takes none says which do.
// config asks the registry rather than keeping its own table of option
// names: the registry is the one list of backends, and the SDKs it links
// are in every binary that loads a configuration anyway.
func checkStorageOptions(v *validator, key string, loc objstore.Location, opts map[string]string) {
	if len(opts) == 0 {
		return
	}
	backends := all.Default()
	names := backends.OptionNames(loc.Scheme)
	if len(names) == 0 {
		v.add(key, optionKeys(opts), "storage options apply to "+all.SchemeForms(backends.OptionSchemes())+" locations only", "remove them from this "+string(loc.Scheme)+" location")
		return
	}
	if err := backends.CheckOptions(loc.Scheme, opts); err != nil {
		v.add(key, optionKeys(opts), err.Error(), "accepted options: "+strings.Join(names, ", "))
	}
}

// optionKeys shows which options are set without their (maybe secret) values.
func optionKeys(opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return "{" + strings.Join(keys, ", ") + "}"
}
