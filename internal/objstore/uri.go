package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// This file owns what every root URI has in common: how a URI finds the
// form that parses it, the bucket/prefix grammar most backends share, and
// the Location a form parses to. Each backend declares its own forms
// (Backend.Forms); a form whose grammar is not scheme://bucket/prefix
// brings its own Parse, and a Location that does not render as
// scheme://bucket/prefix or scheme:///path brings its own Form.

// Scheme names a backend: the Scheme of its Locations.
type Scheme string

// URIForm is one way of writing a root URI of a backend.
type URIForm struct {
	// Prefix begins every URI of the form: "s3://", "abfss://", or "/" for
	// a bare absolute path.
	Prefix string
	// Syntax is the form as help and errors show it: "s3://bucket/prefix".
	Syntax string
	// Parse parses a URI that begins with Prefix; its error says what is
	// wrong in a few words (ParseLocation names the URI and the accepted
	// forms). Nil parses scheme://bucket/prefix, the scheme being Prefix
	// without "://" (ParseBucket).
	Parse func(uri string) (Location, error)
	// UserIsBucket says the form writes part of the location where a URL
	// carries its user name (abfss://container@account...): a user name
	// there is no credential. A password (user:password@) still is.
	UserIsBucket bool
}

// BucketForm is the scheme://bucket/prefix form of a bucket backend.
func BucketForm(scheme Scheme) URIForm {
	return URIForm{Prefix: string(scheme) + "://", Syntax: string(scheme) + "://bucket/prefix"}
}

// Location is a parsed root URI.
type Location struct {
	// Scheme is the backend's.
	Scheme Scheme
	// Path is the absolute, cleaned directory of a root on a file system
	// (the local backend); "" for a root in a bucket.
	Path string
	// Bucket and Prefix are set for a root in a bucket (Bucket is an Azure
	// root's container); Prefix has no leading or trailing "/" ("" for the
	// bucket root).
	Bucket string
	Prefix string
	// Form is set by a backend form that renders otherwise than
	// scheme://bucket/prefix or scheme:///path (Azure's abfss://): it
	// renders the location (String) and carries what the form names beside
	// the bucket and prefix (an account). Nil for the plain forms. Its
	// dynamic type must be comparable (a struct of strings), so that
	// Locations compare with ==.
	Form LocationForm
}

// LocationForm renders a Location in a backend's own URI form.
type LocationForm interface {
	URI(Location) string
}

// KeyPath is the location's path inside its store: the directory of a
// file root, the key prefix of a bucket root. Rules about where a location
// sits (inside a table?) read it, whatever the scheme.
func (l Location) KeyPath() string {
	if l.Path != "" {
		return l.Path
	}
	return l.Prefix
}

// Child is the location of the child name (one path segment) of l.
func (l Location) Child(name string) Location {
	if l.Path != "" {
		l.Path = strings.TrimSuffix(l.Path, "/") + "/" + name
		return l
	}
	if l.Prefix != "" {
		name = l.Prefix + "/" + name
	}
	l.Prefix = name
	return l
}

// String renders the canonical URI: the location's Form, else
// scheme:///path (escaped, so that a path holding '%', '?', '#' or a space
// parses back to the same directory), else scheme://bucket/prefix.
func (l Location) String() string {
	switch {
	case l.Form != nil:
		return l.Form.URI(l)
	case l.Path != "":
		return (&url.URL{Scheme: string(l.Scheme), Path: l.Path}).String()
	case l.Prefix == "":
		return string(l.Scheme) + "://" + l.Bucket
	}
	return string(l.Scheme) + "://" + l.Bucket + "/" + l.Prefix
}

// ParseLocation parses uri with the form whose Prefix it begins with (the
// longest, when several do). An error names the URI and lists the accepted
// forms.
func ParseLocation(uri string, forms []URIForm) (Location, error) {
	bad := func(err error) (Location, error) {
		return Location{}, fmt.Errorf("root URI %q: %w (accepted forms: %s)", uri, err, strings.Join(Syntaxes(forms), ", "))
	}
	if uri == "" {
		return bad(errors.New("empty"))
	}
	if strings.ContainsRune(uri, 0) {
		return bad(errors.New("contains a NUL byte"))
	}
	f, ok := FormOf(uri, forms)
	if !ok {
		if i := strings.Index(uri, "://"); i > 0 {
			return bad(fmt.Errorf("unsupported scheme %q", uri[:i]))
		}
		for _, f := range forms {
			if f.Prefix == "/" {
				return bad(errors.New("relative paths are not accepted; use an absolute path"))
			}
		}
		return bad(errors.New("not a URI"))
	}
	parse := f.Parse
	if parse == nil {
		scheme := Scheme(strings.TrimSuffix(f.Prefix, "://"))
		parse = func(uri string) (Location, error) { return ParseBucket(scheme, uri) }
	}
	loc, err := parse(uri)
	if err != nil {
		return bad(err)
	}
	return loc, nil
}

// FormOf is the form of forms that parses uri: the one with the longest
// Prefix uri begins with.
func FormOf(uri string, forms []URIForm) (URIForm, bool) {
	var best URIForm
	found := false
	for _, f := range forms {
		if strings.HasPrefix(uri, f.Prefix) && (!found || len(f.Prefix) > len(best.Prefix)) {
			best, found = f, true
		}
	}
	return best, found
}

// Syntaxes lists the forms' syntaxes in order, for help and errors.
func Syntaxes(forms []URIForm) []string {
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = f.Syntax
	}
	return out
}

// ParseBucket parses scheme://bucket/prefix: a bucket, then a prefix whose
// leading and trailing "/" are dropped.
func ParseBucket(scheme Scheme, uri string) (Location, error) {
	rest, ok := strings.CutPrefix(uri, string(scheme)+"://")
	if !ok {
		return Location{}, fmt.Errorf("not a %s:// URI", scheme)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, errors.New("missing bucket")
	}
	if strings.ContainsAny(bucket, "?#") || strings.ContainsAny(prefix, "?#") {
		return Location{}, ErrQuery
	}
	prefix, err := CleanPrefix(prefix)
	if err != nil {
		return Location{}, err
	}
	return Location{Scheme: scheme, Bucket: bucket, Prefix: prefix}, nil
}

// ErrQuery refuses a root URI with a query string or a fragment: reaper
// would drop it, and the root would name another place than the user wrote.
var ErrQuery = errors.New("query strings and fragments are not allowed")

// CleanPrefix drops a key prefix's leading and trailing "/" and checks the
// rest is a valid key (or "").
func CleanPrefix(prefix string) (string, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" && ValidateKey(prefix) != nil {
		return "", errors.New(`prefix has an empty, "." or ".." segment`)
	}
	return prefix, nil
}
