package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// DiscoverParent returns the directory a discover pattern lists: the
// pattern without its last segment, which must be exactly "*"
// ("s3://bucket/tenants/*/" -> s3://bucket/tenants, "/data/*" -> /data).
// A query names the root's commit table, not a path: it stays on the
// parent ("s3+ddb://b/tenants/*/?ddbTableName=T" -> s3+ddb://b/tenants?ddbTableName=T),
// and every child inherits it.
func DiscoverParent(pattern string) (objstore.Location, error) {
	path, query, hasQuery := strings.Cut(pattern, "?")
	trimmed := strings.TrimSuffix(path, "/")
	parent, ok := strings.CutSuffix(trimmed, "/*")
	switch {
	case !ok:
		return objstore.Location{}, fmt.Errorf("discover pattern %q: the last path segment must be exactly \"*\" (e.g. s3://bucket/tenants/*/ or /data/*/)", pattern)
	case strings.Contains(parent, "*"):
		return objstore.Location{}, fmt.Errorf("discover pattern %q: only the last path segment may be \"*\"", pattern)
	case parent == "" || parent == "file://":
		parent += "/"
	}
	if hasQuery {
		parent += "?" + query
	}
	loc, err := all.ParseLocation(parent)
	if err != nil {
		return objstore.Location{}, fmt.Errorf("discover pattern %q: %w", pattern, err)
	}
	return loc, nil
}

func (c Config) validateRoots(v *validator) {
	schemes := map[objstore.Scheme]bool{}
	defer func() { c.validateLeaseFor(v, schemes) }()
	seen := map[string]string{}
	for i, r := range c.Roots {
		key := fmt.Sprintf("roots[%d]", i)
		if refuseCredentials(v, key+".uri", r.URI) {
			continue
		}
		loc, err := all.ParseLocation(r.URI)
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
		schemes[loc.Scheme] = true
		checkStorageOptions(v, key+".storage_options", loc, r.StorageOptions)
	}
	for i, d := range c.Discover {
		key := fmt.Sprintf("discover[%d]", i)
		if refuseCredentials(v, key+".uri", d.URI) {
			continue
		}
		loc, err := DiscoverParent(d.URI)
		if err != nil {
			v.add(key+".uri", d.URI, err.Error(), "write the parent URI followed by /*/")
			continue
		}
		schemes[loc.Scheme] = true
		checkStorageOptions(v, key+".storage_options", loc, d.StorageOptions)
	}
}

// validateLeaseFor refuses a lease too short for the clock of a root's
// backend (S3 reads to the second): such a lease would look expired at its
// first renewal and every purge would stop as lease_lost.
func (c Config) validateLeaseFor(v *validator, schemes map[objstore.Scheme]bool) {
	ttl := c.Defaults.LeaseTTL.D()
	if ttl <= 0 {
		return // reported as not positive
	}
	backends := all.Default()
	for _, s := range backends.Schemes() {
		if !schemes[s] {
			continue
		}
		res := backends.ClockResolution(s)
		if min := lock.MinTTL(res); ttl < min {
			v.add("defaults.lease_ttl", c.Defaults.LeaseTTL, fmt.Sprintf("too short for %s:// roots, whose store clock reads to %s", s, res),
				fmt.Sprintf("set at least %s (the default is %s)", Duration(min), Duration(lock.DefaultTTL)))
			return
		}
	}
}

// refuseCredentials refuses a location URI with userinfo
// (s3://KEY:SECRET@bucket/prefix): the URI is a root's name in logs, the
// textfile, the ledger and the root label pushed to a shared Pushgateway,
// so a secret in it would leak everywhere. A form that writes its bucket
// where a URL's user name goes (abfss://container@account...) keeps it,
// but not a password. The error shows the URI with the userinfo masked.
// It reports whether uri was refused.
func refuseCredentials(v *validator, key, uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return false
	}
	if _, password := u.User.Password(); !password {
		if f, ok := objstore.FormOf(uri, all.Default().Forms()); ok && f.UserIsBucket {
			return false
		}
	}
	u.User = url.User(RedactedValue)
	v.add(key, u.String(), "credentials in a location URI are refused: the URI is printed in logs and metric labels",
		"remove the user:secret@ part and pass credentials as storage options (--storage-option aws_access_key_id=... "+
			"and aws_secret_access_key=..., or storage_options in the config file) or through the AWS environment")
	return true
}

// CheckNoCredentials applies the same rule to a URI given outside a
// configuration (the --root of single-root commands); key names it.
func CheckNoCredentials(key, uri string) error {
	v := &validator{}
	refuseCredentials(v, key, uri)
	return v.err()
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
