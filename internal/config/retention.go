package config

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/retention"
)

// Retention is version retention of live tables (docs/RETENTION.md): every
// pass also removes the old versions of the live tables of a root where it
// is enabled, as Lance's cleanup_old_versions would. It removes time
// travel, so it is off unless a user switches it on, for every root (the
// top-level retention: section) or for one root or discover pattern (its
// own retention: section, whose keys replace the top-level ones).
type Retention struct {
	// Enabled switches retention on.
	Enabled bool `yaml:"enabled"`
	// OlderThan removes versions written more than this long before the
	// store's clock; at least safety.min_ttl unless allow_short_ttl.
	OlderThan Duration `yaml:"older_than"`
	// KeepVersions always keeps the newest N versions (at least 1).
	KeepVersions int `yaml:"keep_versions"`
	// DeleteUnverified deletes files no manifest references whatever their
	// age: only safe when nothing writes to the table.
	DeleteUnverified bool `yaml:"delete_unverified"`
	// UnverifiedAfter is the age from which a file no manifest references
	// is deleted without DeleteUnverified.
	UnverifiedAfter Duration `yaml:"unverified_after"`
	// Namespaces are a root's retention of the tables in LanceDB
	// namespaces (RetentionOverride.Namespaces, carried here by
	// RetentionFor): the first entry whose pattern matches a table's
	// namespace applies its keys over the rest (ForNamespace). Set per
	// root or pattern only, so not a key of the top-level section.
	Namespaces []NamespaceRetention `yaml:"-"`
}

// NamespaceRetention is the retention of the tables in the namespaces
// Match matches, and in every namespace nested in them: each key it sets
// replaces the root's (or the top-level section's) own, the others are
// inherited. Tables in no namespace (root tables) take the root's.
type NamespaceRetention struct {
	// Match is a pattern (Go's path.Match: *, ?, [a-z]) of a namespace
	// path written as LanceDB writes it in object ids, its levels joined
	// by "$": "tenant_*" matches tenant_a and tenant_a$sub, "staging"
	// matches staging and everything nested in it.
	Match            string    `yaml:"match"`
	Enabled          *bool     `yaml:"enabled"`
	OlderThan        *Duration `yaml:"older_than"`
	KeepVersions     *int      `yaml:"keep_versions"`
	DeleteUnverified *bool     `yaml:"delete_unverified"`
	UnverifiedAfter  *Duration `yaml:"unverified_after"`
}

// Matches reports whether the entry applies to a table in namespace (a
// path of levels; nil for a root table): its pattern matches the path or
// one of the namespaces enclosing it.
func (n NamespaceRetention) Matches(namespace []string) bool {
	for i := 1; i <= len(namespace); i++ {
		if ok, _ := path.Match(n.Match, strings.Join(namespace[:i], namespaceSep)); ok {
			return true
		}
	}
	return false
}

// namespaceSep joins a namespace path's levels, as LanceDB's object ids.
const namespaceSep = "$"

// ForNamespace is the retention of a table in namespace: r with the first
// matching entry of r.Namespaces applied (r itself for a root table, or
// when none matches).
func (r Retention) ForNamespace(namespace []string) Retention {
	for _, n := range r.Namespaces {
		if n.Matches(namespace) {
			return r.entry(n)
		}
	}
	return r
}

// entry is r with n's keys applied, for the tables n matches.
func (r Retention) entry(n NamespaceRetention) Retention {
	out := r.with(RetentionOverride{Enabled: n.Enabled, OlderThan: n.OlderThan, KeepVersions: n.KeepVersions,
		DeleteUnverified: n.DeleteUnverified, UnverifiedAfter: n.UnverifiedAfter})
	out.Namespaces = nil
	return out
}

// AnyEnabled reports whether retention runs on some table under r: the
// section or one of its namespace entries is enabled.
func (r Retention) AnyEnabled() bool {
	if r.Enabled {
		return true
	}
	for _, n := range r.Namespaces {
		if n.Enabled != nil && *n.Enabled {
			return true
		}
	}
	return false
}

// RetentionOverride is a root's or a discover pattern's retention: each key
// it sets replaces the top-level one, the others are inherited.
type RetentionOverride struct {
	Enabled          *bool     `yaml:"enabled"`
	OlderThan        *Duration `yaml:"older_than"`
	KeepVersions     *int      `yaml:"keep_versions"`
	DeleteUnverified *bool     `yaml:"delete_unverified"`
	UnverifiedAfter  *Duration `yaml:"unverified_after"`
	// Namespaces are the retention of this root's tables in LanceDB
	// namespaces, entry by entry (NamespaceRetention).
	Namespaces []NamespaceRetention `yaml:"namespaces"`
}

// defaultRetention is off, with Lance's own defaults for the rest:
// optimize() removes versions older than 7 days and keeps unreferenced
// files younger than 7 days.
func defaultRetention() Retention {
	return Retention{
		OlderThan:       Duration(7 * 24 * time.Hour),
		KeepVersions:    retention.DefaultKeepVersions,
		UnverifiedAfter: Duration(retention.DefaultUnverifiedAfter),
	}
}

// RetentionFor is a root's retention: the top-level section with the
// root's own keys o applied (a discovered root carries its pattern's).
func (c Config) RetentionFor(o RetentionOverride) Retention {
	r := c.Retention.with(o)
	r.Namespaces = o.Namespaces
	return r
}

// with is r with the keys o sets.
func (r Retention) with(o RetentionOverride) Retention {
	if o.Enabled != nil {
		r.Enabled = *o.Enabled
	}
	if o.OlderThan != nil {
		r.OlderThan = *o.OlderThan
	}
	if o.KeepVersions != nil {
		r.KeepVersions = *o.KeepVersions
	}
	if o.DeleteUnverified != nil {
		r.DeleteUnverified = *o.DeleteUnverified
	}
	if o.UnverifiedAfter != nil {
		r.UnverifiedAfter = *o.UnverifiedAfter
	}
	return r
}

// Policy is the retention plan's policy.
func (r Retention) Policy() retention.Policy {
	return retention.Policy{OlderThan: r.OlderThan.D(), KeepVersions: r.KeepVersions,
		DeleteUnverified: r.DeleteUnverified, UnverifiedAfter: r.UnverifiedAfter.D()}
}

// validateRetention checks the top-level section and every root's and
// pattern's result, naming the key that is wrong. A problem a root
// inherits from the top-level section is reported once, at the top: a
// value every root inherits is one mistake, not one per root. A root's
// problem with a key it does not set itself says where the value comes
// from.
func (c Config) validateRetention(v *validator) {
	top := &validator{}
	c.checkRetention(top, "retention", c.Retention)
	v.errs = append(v.errs, top.errs...)
	atTop := map[string]bool{}
	for _, e := range top.errs {
		ve := e.(*ValidationError)
		atTop[strings.TrimPrefix(ve.Key, "retention")+": "+ve.Problem] = true
	}
	check := func(key string, o RetentionOverride) {
		own := &validator{}
		c.checkRetention(own, key, c.RetentionFor(o))
		for _, e := range own.errs {
			ve := e.(*ValidationError)
			field := strings.TrimPrefix(ve.Key, key)
			if o.sets(field) {
				v.errs = append(v.errs, ve)
				continue
			}
			if atTop[field+": "+ve.Problem] {
				continue
			}
			ve.Value += ", from retention" + field
			v.errs = append(v.errs, ve)
		}
	}
	for i, r := range c.Roots {
		check(fmt.Sprintf("roots[%d].retention", i), r.Retention)
	}
	for i, r := range c.Discover {
		check(fmt.Sprintf("discover[%d].retention", i), r.Retention)
	}
}

// sets reports whether the override sets field (".older_than", ...).
func (o RetentionOverride) sets(field string) bool {
	switch field {
	case ".enabled":
		return o.Enabled != nil
	case ".older_than":
		return o.OlderThan != nil
	case ".keep_versions":
		return o.KeepVersions != nil
	case ".delete_unverified":
		return o.DeleteUnverified != nil
	case ".unverified_after":
		return o.UnverifiedAfter != nil
	}
	// A namespace entry is the root's own, with its own keys.
	return strings.HasPrefix(field, ".namespaces[")
}

// checkNamespaces checks each namespace entry of r (at key) and the
// retention it makes.
func (c Config) checkNamespaces(v *validator, key string, r Retention) {
	for i, n := range r.Namespaces {
		k := fmt.Sprintf("%s.namespaces[%d]", key, i)
		if _, err := path.Match(n.Match, ""); n.Match == "" || err != nil {
			v.add(k+".match", n.Match, "is not a namespace pattern", `set a namespace path with its levels joined by "$", or a pattern of one (path.Match): "tenant_*", "staging", "prod$analytics"`)
			continue
		}
		c.checkRetention(v, k, r.entry(n))
	}
}

func (c Config) checkRetention(v *validator, key string, r Retention) {
	c.checkNamespaces(v, key, r)
	if r.KeepVersions < 1 {
		v.add(key+".keep_versions", r.KeepVersions, "must be at least 1", "keep at least the newest version: set 1 or more")
	}
	if r.UnverifiedAfter.D() <= 0 {
		v.add(key+".unverified_after", r.UnverifiedAfter, "must be positive",
			"set how old a file no version references must be before it is deleted, e.g. 7d (Lance's default)")
	}
	if !r.Enabled {
		return
	}
	switch floor := c.Safety.MinTTL.D(); {
	case r.OlderThan.D() <= 0:
		v.add(key+".older_than", r.OlderThan, "must be positive", "set how old a version must be to be removed, e.g. 7d")
	case r.OlderThan.D() < floor && !c.Safety.AllowShortTTL:
		v.add(key+".older_than", r.OlderThan, fmt.Sprintf("is below safety.min_ttl %s: versions that recent may still be read", floor),
			"raise it to safety.min_ttl or more, or set safety.allow_short_ttl: true")
	}
	if floor := c.Safety.MinTTL.D(); r.UnverifiedAfter.D() > 0 && r.UnverifiedAfter.D() < floor && !r.DeleteUnverified && !c.Safety.AllowShortTTL {
		v.add(key+".unverified_after", r.UnverifiedAfter, fmt.Sprintf("is below safety.min_ttl %s: a file that young no version references may be an index build or a write in progress", floor),
			"raise it to safety.min_ttl or more (Lance's default is 7d), or set safety.allow_short_ttl: true")
	}
}

// RetentionSummary says in one line where version retention is on: "off",
// or the roots and patterns it cleans with their settings. A daemon logs it
// at start, so an operator sees at once what may lose its time travel.
func (c Config) RetentionSummary() string {
	var on []string
	describe := func(r Retention) string {
		s := fmt.Sprintf("older_than %s, keep_versions %d", r.OlderThan, r.KeepVersions)
		if r.DeleteUnverified {
			s += ", delete_unverified"
		}
		return s
	}
	describeNamespaces := func(r Retention) string {
		var out []string
		for _, n := range r.Namespaces {
			nr := r.entry(n)
			if !nr.Enabled {
				out = append(out, fmt.Sprintf("namespaces %s off", n.Match))
				continue
			}
			out = append(out, fmt.Sprintf("namespaces %s on (%s)", n.Match, describe(nr)))
		}
		if len(out) == 0 {
			return ""
		}
		return ", " + strings.Join(out, ", ")
	}
	for _, l := range [][]Root{c.Roots, c.Discover} {
		for _, r := range l {
			if rr := c.RetentionFor(r.Retention); rr.Enabled {
				on = append(on, fmt.Sprintf("%s (%s%s)", r.URI, describe(rr), describeNamespaces(rr)))
			} else if rr.AnyEnabled() {
				on = append(on, fmt.Sprintf("%s (root tables off%s)", r.URI, describeNamespaces(rr)))
			}
		}
	}
	switch {
	case len(on) > 0:
		return "on for " + strings.Join(on, "; ")
	case c.Retention.Enabled:
		return "on for every root (" + describe(c.Retention) + ")"
	}
	return "off"
}
