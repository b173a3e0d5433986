package all

import (
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how help and messages name the registered backends: the
// root-URI forms and the roots that take storage options, rendered from
// the descriptors, so that no help line lists them by hand (and drifts
// when a backend is added).

// FormList renders every form's syntax, in the order of registration:
// "/abs/path, file:///abs/path, s3://bucket/prefix ... or
// abfss://container@account.dfs.core.windows.net/prefix".
func (r *Registry) FormList() string {
	return JoinList(objstore.Syntaxes(r.Forms()), "or")
}

// OptionForms renders the URI prefixes of the roots that take storage
// options, in the order of registration: "s3://, gs://, az:// and
// abfss://".
func (r *Registry) OptionForms() string {
	var prefixes []string
	for _, b := range r.Backends() {
		if len(b.Options) == 0 {
			continue
		}
		for _, f := range b.Forms {
			prefixes = append(prefixes, f.Prefix)
		}
	}
	return JoinList(prefixes, "and")
}

// JoinList joins items for a sentence: "a", "a or b", "a, b or c".
func JoinList(items []string, conj string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

// CanonicalOptions lists the storage option names b documents: its
// options without the other spellings of one (AliasOf), in b's order.
func CanonicalOptions(b objstore.Backend) []objstore.StorageOption {
	var out []objstore.StorageOption
	for _, o := range b.Options {
		if o.AliasOf == "" {
			out = append(out, o)
		}
	}
	return out
}
