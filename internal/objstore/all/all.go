// Package all opens a Store for any root URI reaper supports. Backends are
// listed once, explicitly, in Default (no init() registration), so adding a
// scheme is a visible one-line change and a duplicate is an error.
package all

import (
	"context"
	"fmt"
	"slices"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

// Opener opens one backend's store for a parsed location and its storage
// options.
type Opener func(ctx context.Context, loc objstore.Location, options map[string]string) (objstore.Store, error)

// Registry maps URI schemes to backends.
type Registry struct {
	openers map[objstore.Scheme]Opener
}

// NewRegistry returns an empty registry; tests use it to register fakes.
func NewRegistry() *Registry {
	return &Registry{openers: map[objstore.Scheme]Opener{}}
}

// Register adds a backend; a scheme registered twice is an error.
func (r *Registry) Register(scheme objstore.Scheme, open Opener) error {
	if _, dup := r.openers[scheme]; dup {
		return fmt.Errorf("register backend %q: already registered", scheme)
	}
	r.openers[scheme] = open
	return nil
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []objstore.Scheme {
	var out []objstore.Scheme
	for s := range r.openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open parses uri and opens the store of its scheme.
func (r *Registry) Open(ctx context.Context, uri string, options map[string]string) (objstore.Store, error) {
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return nil, err
	}
	open, ok := r.openers[loc.Scheme]
	if !ok {
		return nil, fmt.Errorf("root URI %q: no backend for scheme %q (have %v)", uri, loc.Scheme, r.Schemes())
	}
	return open(ctx, loc, options)
}

// Default returns the registry of every backend reaper ships.
func Default() *Registry {
	r := NewRegistry()
	for _, b := range []struct {
		scheme objstore.Scheme
		open   Opener
	}{
		{objstore.SchemeFile, openLocal},
		{objstore.SchemeS3, openS3},
	} {
		if err := r.Register(b.scheme, b.open); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return r
}

// Open opens uri with the default registry.
func Open(ctx context.Context, uri string, options map[string]string) (objstore.Store, error) {
	return Default().Open(ctx, uri, options)
}

// openLocal refuses storage options: they configure object stores only, and
// silently ignoring them would hide a wrong root URI.
func openLocal(_ context.Context, loc objstore.Location, options map[string]string) (objstore.Store, error) {
	if len(options) > 0 {
		return nil, fmt.Errorf("open %s: storage option %q applies to s3:// roots only", loc, sortedKeys(options)[0])
	}
	return local.Open(loc.Path)
}

func openS3(ctx context.Context, loc objstore.Location, options map[string]string) (objstore.Store, error) {
	return s3.Open(ctx, loc, options)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// OpenWith opens uri like Open, passing extra options to the S3 backend
// (for example a request-counting transport); file roots ignore them.
func OpenWith(ctx context.Context, uri string, options map[string]string, s3opts ...s3.Option) (objstore.Store, error) {
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return nil, err
	}
	if loc.Scheme == objstore.SchemeS3 {
		return s3.Open(ctx, loc, options, s3opts...)
	}
	return Open(ctx, uri, options)
}
