package retry

import (
	"context"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Listings are retried from the start of the prefix, since the Store
// interface has no continuation token. Keys arrive sorted, so the wrapper
// remembers the greatest key (or common prefix) it delivered and, on a
// retried attempt only, drops every entry at or before it: the callback
// never sees an entry twice. The first attempt passes every entry through,
// so a backend that streams a huge directory unsorted (local) loses none.
// Pages left empty by the filter are not delivered. The callback's own error
// ends the listing unchanged and is never retried. The pacer is waited on
// before the first page and again before each following page is fetched.

// List retries a failed listing without repeating entries.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	var last string
	delivered, attempts := false, 0
	_, err := s.do(ctx, "list", prefix, func(ctx context.Context) error {
		attempts++
		retried := attempts > 1
		return s.inner.List(ctx, prefix, func(p objstore.Page) error {
			if delivered && retried {
				p = pageAfter(p, last)
				if len(p.Objects)+len(p.Prefixes) == 0 {
					return nil
				}
			}
			if err := fn(p); err != nil {
				return &finalError{err}
			}
			last, delivered = maxEntry(p, last), true
			return s.nextPage(ctx, prefix)
		})
	})
	return err
}

// Walk retries a failed recursive listing without repeating entries.
func (s *Store) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	var last string
	delivered, attempts := false, 0
	_, err := s.do(ctx, "walk", prefix, func(ctx context.Context) error {
		attempts++
		retried := attempts > 1
		return s.inner.Walk(ctx, prefix, func(objs []objstore.Object) error {
			if delivered && retried {
				objs = objectsAfter(objs, last)
				if len(objs) == 0 {
					return nil
				}
			}
			if err := fn(objs); err != nil {
				return &finalError{err}
			}
			last, delivered = max(last, objs[len(objs)-1].Key), true
			return s.nextPage(ctx, prefix)
		})
	})
	return err
}

// nextPage reports the page fetched and paces the fetch of the next one.
func (s *Store) nextPage(ctx context.Context, prefix string) error {
	s.succeeded(prefix)
	if err := s.pace(ctx, prefix); err != nil {
		return &finalError{err}
	}
	return nil
}

func pageAfter(p objstore.Page, last string) objstore.Page {
	var out objstore.Page
	out.Objects = objectsAfter(p.Objects, last)
	for _, pr := range p.Prefixes {
		if pr > last {
			out.Prefixes = append(out.Prefixes, pr)
		}
	}
	return out
}

func objectsAfter(objs []objstore.Object, last string) []objstore.Object {
	var out []objstore.Object
	for _, o := range objs {
		if o.Key > last {
			out = append(out, o)
		}
	}
	return out
}

func maxEntry(p objstore.Page, last string) string {
	if n := len(p.Objects); n > 0 {
		last = max(last, p.Objects[n-1].Key)
	}
	if n := len(p.Prefixes); n > 0 {
		last = max(last, p.Prefixes[n-1])
	}
	return last
}
