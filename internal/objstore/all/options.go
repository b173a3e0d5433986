package all

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the storage options as the backends declare them:
// validation by scheme, the names each scheme accepts, and which are secret.

// CheckOptions validates storage options for a root of scheme with its
// backend's own rules. A scheme that takes none names the schemes that do.
func (r *Registry) CheckOptions(scheme objstore.Scheme, options map[string]string) error {
	if len(options) == 0 {
		return nil
	}
	b, ok := r.backends[scheme]
	if !ok {
		return fmt.Errorf("no backend for scheme %q (have %v)", scheme, r.Schemes())
	}
	if len(b.Options) == 0 {
		return fmt.Errorf("storage option %q %s", sortedKeys(options)[0], r.TakesOptions())
	}
	if b.CheckOptions != nil {
		return b.CheckOptions(options)
	}
	names := b.OptionNames()
	for _, k := range sortedKeys(options) {
		if !slices.Contains(names, k) {
			return fmt.Errorf("unknown storage option %q (accepted: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// TakesOptions says which roots take storage options, for messages about
// options given elsewhere: "applies to s3:// roots only".
func (r *Registry) TakesOptions() string {
	schemes := r.OptionSchemes()
	if len(schemes) == 0 {
		return "is not accepted: no backend takes storage options"
	}
	return "applies to " + SchemeForms(schemes) + " roots only"
}

// OptionSchemes lists the schemes whose roots take storage options, sorted.
func (r *Registry) OptionSchemes() []objstore.Scheme {
	var out []objstore.Scheme
	for _, s := range r.Schemes() {
		if len(r.backends[s].Options) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// SchemeForms renders schemes as URI prefixes for messages: "s3://",
// "az://, gs:// and s3://".
func SchemeForms(schemes []objstore.Scheme) string {
	forms := make([]string, len(schemes))
	for i, s := range schemes {
		forms[i] = string(s) + "://"
	}
	return JoinList(forms, "and")
}

// OptionNames lists the storage option names scheme accepts, in the
// backend's order.
func (r *Registry) OptionNames(scheme objstore.Scheme) []string {
	return r.backends[scheme].OptionNames()
}

// IsSecretOption reports whether any backend declares the option name
// secret; its value must then never be logged or printed.
func (r *Registry) IsSecretOption(name string) bool {
	for _, b := range r.backends {
		for _, o := range b.Options {
			if o.Name == name && o.Secret {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
