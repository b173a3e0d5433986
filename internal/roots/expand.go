package roots

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// OpenFunc opens the store of a root URI with its storage options
// (stack.Open in production, with retries and metrics).
type OpenFunc func(ctx context.Context, uri string, opts map[string]string) (objstore.Store, error)

// errStop ends a listing after its first page; errFull ends a kept
// child's listing once it holds more names than discovery carries.
var (
	errStop = errors.New("stop listing")
	errFull = errors.New("listing full")
)

// maxCarriedNames is how many names the listings discovery hands a pass
// (Root.Listing) may hold in all, some 100 bytes a name: the listings of
// every root found are held until each root is planned. A root found past
// it carries none and its plan lists it again, one listing more for a big
// root instead of memory that grows with every root of the pass.
const maxCarriedNames = 100_000

// Expand returns the configured roots plus the roots found by each discover
// pattern, deduplicated by canonical URI (objstore.Location.String, e.g.
// "file:///data/db", "s3://bucket/db") and sorted by it. Returned URIs are
// canonical. A configured root wins over a discovered one with the same
// URI; discovered roots carry their pattern's storage options.
//
// A pattern is expanded by opening its parent (the URI without the trailing
// "*/"), listing one level, and keeping each child that holds, on the first
// page of its own listing, a table directory ("<name>.lance/", or a
// namespaced table's "<8 hex>_<object id>/"), the namespace catalog
// "__manifest/" or a "<name>.deleted" object. A kept child carries its whole listing (Root.Listing), so the
// pass does not list it again: Expand is called once per pass. The
// listings carried hold maxCarriedNames names at most in all; a child
// found past that carries none.
//
// Errors are partial: a pattern (or child) that cannot be opened or listed
// is skipped and its error, naming the pattern, is joined into the returned
// error, while every other root is still returned. The caller logs the
// error and carries on with the roots. A configured root that does not
// parse is an error of the same kind (Validate reports it first). Only a
// cancelled ctx returns no roots.
func Expand(ctx context.Context, cfg config.Config, open OpenFunc) ([]Root, error) {
	return expand(ctx, cfg, open, maxCarriedNames)
}

// expand is Expand carrying listings of at most budget names in all.
func expand(ctx context.Context, cfg config.Config, open OpenFunc, budget int) ([]Root, error) {
	byURI := map[string]Root{}
	var errs []error
	for _, r := range cfg.Roots {
		loc, err := all.ParseLocation(r.URI)
		if err != nil {
			errs = append(errs, fmt.Errorf("root %q: %w", r.URI, err))
			continue
		}
		if _, dup := byURI[loc.String()]; !dup {
			byURI[loc.String()] = Root{URI: loc.String(), StorageOptions: r.StorageOptions, Retention: r.Retention}
		}
	}
	for _, p := range cfg.Discover {
		found, err := discover(ctx, p, open, &budget)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range found {
			if _, dup := byURI[r.URI]; !dup {
				byURI[r.URI] = r
			}
		}
	}
	out := make([]Root, 0, len(byURI))
	for _, r := range byURI {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Root) int { return cmp.Compare(a.URI, b.URI) })
	return out, errors.Join(errs...)
}

// discover expands one pattern; it returns what it found even on error.
// budget is how many names the listings it carries may still hold.
func discover(ctx context.Context, p config.Root, open OpenFunc, budget *int) ([]Root, error) {
	parent, err := config.DiscoverParent(p.URI)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error { return fmt.Errorf("discover %s: %w", p.URI, err) }
	st, err := open(ctx, parent.String(), p.StorageOptions)
	if err != nil {
		return nil, wrap(err)
	}
	var children []string
	err = st.List(ctx, "", func(pg objstore.Page) error {
		children = append(children, pg.Prefixes...)
		return nil
	})
	if err != nil {
		return nil, wrap(fmt.Errorf("list %s: %w", parent, err))
	}
	var found []Root
	var errs []error
	for _, child := range children {
		ok, listed, err := probe(ctx, st, child, *budget)
		if listed != nil {
			*budget -= listed.Len()
		}
		if err != nil {
			if ctx.Err() != nil {
				return found, ctx.Err()
			}
			errs = append(errs, wrap(fmt.Errorf("list %s: %w", childLocation(parent, child), err)))
			continue
		}
		if ok {
			found = append(found, Root{URI: childLocation(parent, child).String(), StorageOptions: p.StorageOptions, Retention: p.Retention, Listing: listed})
		}
	}
	return found, errors.Join(errs...)
}

// probe reports whether the first listing page under prefix holds a table
// directory (a root table's, or one of LanceDB's namespaces), the
// namespace catalog or a soft-delete marker. A child that is not a database costs
// that one page; for one that is, it reads the remaining pages too and
// returns the whole listing, which the pass plans from instead of listing
// the root again (lifecycle.PlanPurgeFrom), unless the child has more than
// budget names: it stops reading then and returns no listing (the pass
// lists it). A later page that fails leaves the root found without a
// listing: its plan lists it and reports why.
func probe(ctx context.Context, st objstore.Store, prefix string, budget int) (bool, *lifecycle.Listing, error) {
	ok, first := false, true
	listed := lifecycle.NewListing(prefix, max(budget, 1))
	err := st.List(ctx, prefix, func(pg objstore.Page) error {
		if first {
			first = false
			ok = lifecycle.ShowsDatabase(prefix, pg)
			if !ok {
				return errStop // one page is enough
			}
		}
		listed.Add(pg)
		if listed.Full() {
			return errFull
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return false, nil, nil
	case errors.Is(err, errFull):
		return true, nil, nil
	case err != nil && ok && ctx.Err() == nil:
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	return ok, listed, nil
}

// childLocation is the location of a child prefix ("tenant-a/") of parent.
func childLocation(parent objstore.Location, child string) objstore.Location {
	return parent.Child(strings.TrimSuffix(child, "/"))
}
