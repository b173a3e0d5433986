// Package all is the registry of reaper's storage backends. Backends are
// listed once, explicitly, in Default (no init() registration), so adding a
// scheme is a visible one-line change and a duplicate is an error. Each entry
// is the backend's own descriptor (objstore.Backend): the registry opens
// stores through it, and validates and redacts storage options with it, so
// no other package needs to know a backend by name.
//
// Open returns the bare backend. Callers that do I/O for real (the public
// API, the worker, discovery, the audit ledger) open through package stack,
// which adds retries, pacing and instrumentation on top.
package all

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/gcs"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

// Default returns the registry of every backend reaper ships.
func Default() *Registry {
	r := NewRegistry()
	for _, b := range []objstore.Backend{
		local.Backend(),
		s3.Backend(),
		gcs.Backend(),
		azure.Backend(),
		s3ddb.Backend(),
	} {
		if err := r.Register(b); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return r
}

// Open opens uri with the default registry, bare: no retries, no metrics.
func Open(ctx context.Context, uri string, options map[string]string) (objstore.Store, error) {
	return Default().Open(ctx, uri, options, objstore.OpenEnv{})
}

// ParseLocation parses a root URI in the forms of the default registry.
func ParseLocation(uri string) (objstore.Location, error) {
	return Default().ParseLocation(uri)
}

// Registry maps URI schemes to backends.
type Registry struct {
	backends map[objstore.Scheme]objstore.Backend
	// order is the order of registration, which help and errors follow.
	order []objstore.Scheme
}

// NewRegistry returns an empty registry; tests use it to register fakes.
func NewRegistry() *Registry {
	return &Registry{backends: map[objstore.Scheme]objstore.Backend{}}
}

// Register adds a backend. A scheme registered twice, a descriptor without
// a scheme, an Open or a URI form, and a form another backend has are
// errors.
func (r *Registry) Register(b objstore.Backend) error {
	switch {
	case b.Scheme == "" || b.Open == nil || len(b.Forms) == 0:
		return fmt.Errorf("register backend %q: scheme, Open and at least one URI form are required", b.Scheme)
	case r.has(b.Scheme):
		return fmt.Errorf("register backend %q: already registered", b.Scheme)
	}
	if err := r.checkForms(b); err != nil {
		return fmt.Errorf("register backend %q: %w", b.Scheme, err)
	}
	r.backends[b.Scheme] = b
	r.order = append(r.order, b.Scheme)
	return nil
}

// checkForms refuses a form without a prefix or syntax, a bucket form
// (no Parse) whose prefix is not the backend's scheme://, and a prefix
// already taken.
func (r *Registry) checkForms(b objstore.Backend) error {
	taken := map[string]bool{}
	for _, f := range r.Forms() {
		taken[f.Prefix] = true
	}
	for _, f := range b.Forms {
		switch {
		case f.Prefix == "" || f.Syntax == "":
			return fmt.Errorf("URI form %q: prefix and syntax are required", f.Syntax)
		case f.Parse == nil && f.Prefix != string(b.Scheme)+"://":
			return fmt.Errorf("URI form %q: a form without Parse is %s://bucket/prefix", f.Syntax, b.Scheme)
		case taken[f.Prefix]:
			return fmt.Errorf("URI form %q: prefix %q is taken", f.Syntax, f.Prefix)
		}
		taken[f.Prefix] = true
	}
	return nil
}

// Backends lists the registered backends in the order of registration.
func (r *Registry) Backends() []objstore.Backend {
	out := make([]objstore.Backend, len(r.order))
	for i, s := range r.order {
		out[i] = r.backends[s]
	}
	return out
}

// Forms lists every backend's root-URI forms, in the order of
// registration.
func (r *Registry) Forms() []objstore.URIForm {
	var out []objstore.URIForm
	for _, b := range r.Backends() {
		out = append(out, b.Forms...)
	}
	return out
}

// ParseLocation parses a root URI in the registered forms; an error names
// the URI and lists them.
func (r *Registry) ParseLocation(uri string) (objstore.Location, error) {
	return objstore.ParseLocation(uri, r.Forms())
}

func (r *Registry) has(s objstore.Scheme) bool {
	_, ok := r.backends[s]
	return ok
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []objstore.Scheme {
	var out []objstore.Scheme
	for s := range r.backends {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Resolve parses uri and returns its location and its scheme's backend.
func (r *Registry) Resolve(uri string) (objstore.Location, objstore.Backend, error) {
	loc, err := r.ParseLocation(uri)
	if err != nil {
		return loc, objstore.Backend{}, err
	}
	b, ok := r.backends[loc.Scheme]
	if !ok {
		return loc, b, fmt.Errorf("root URI %q: no backend for scheme %q (have %v)", uri, loc.Scheme, r.Schemes())
	}
	return loc, b, nil
}

// Open parses uri, checks the storage options and opens the store of its
// scheme, bare.
func (r *Registry) Open(ctx context.Context, uri string, options map[string]string, env objstore.OpenEnv) (objstore.Store, error) {
	s, _, err := r.OpenBackend(ctx, uri, options, env)
	return s, err
}

// OpenBackend is Open that also returns the backend's descriptor, whose
// error classification the retry layer needs.
func (r *Registry) OpenBackend(ctx context.Context, uri string, options map[string]string, env objstore.OpenEnv) (objstore.Store, objstore.Backend, error) {
	loc, b, err := r.Resolve(uri)
	if err != nil {
		return nil, b, err
	}
	if err := r.CheckOptions(loc.Scheme, options); err != nil {
		return nil, b, fmt.Errorf("open %s: %w", loc, err)
	}
	s, err := b.Open(ctx, loc, options, env)
	return s, b, err
}

// ClockResolution is the clock resolution the backend of scheme declares
// (zero for an unknown scheme or a fine-grained clock).
func (r *Registry) ClockResolution(scheme objstore.Scheme) time.Duration {
	return r.backends[scheme].ClockResolution
}
