package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// errStop ends a listing early; it never leaves this package.
var errStop = errors.New("stop listing")

// Drop soft-deletes a table: it writes <name>.deleted create-if-absent and
// leaves the data. ttl <= 0 uses the default TTL. A second drop returns
// ErrAlreadyDeleted and never rewrites the marker: that would restart its
// clock.
func (ns *Namespace) Drop(ctx context.Context, name string, ttl time.Duration) (Marker, error) {
	if err := ValidateName(name); err != nil {
		return Marker{}, err
	}
	if ttl <= 0 {
		ttl = ns.opts.DefaultTTL
	}
	exists, err := ns.hasData(ctx, name)
	if err != nil {
		return Marker{}, err
	}
	if !exists {
		if _, err := ns.store.Head(ctx, MarkerKey(name)); err == nil {
			return Marker{}, fmt.Errorf("drop %q: %w (only its marker is left; purge removes it)", name, ErrAlreadyDeleted)
		}
		return Marker{}, fmt.Errorf("drop %q: %w: no objects under %s", name, ErrNotFound, TableDir(name))
	}
	now := ns.opts.Now()
	body := EncodeMarker(now, ttl)
	if _, err := ns.store.PutIfAbsent(ctx, MarkerKey(name), body); err != nil {
		if errors.Is(err, objstore.ErrPrecondition) {
			return Marker{}, fmt.Errorf("drop %q: %w; the existing marker was left as it is", name, ErrAlreadyDeleted)
		}
		return Marker{}, fmt.Errorf("drop %q: write marker: %w", name, err)
	}
	ns.log.Info("table soft-deleted", "table", name, "ttl", ttl)
	return Marker{DeletedAtMs: now.UnixMilli(), TTLMs: ttl.Milliseconds(), HasTTL: true}, nil
}

// hasData reports whether <name>.lance/ holds at least one object; it costs
// one listing request.
func (ns *Namespace) hasData(ctx context.Context, name string) (bool, error) {
	found := false
	err := ns.store.List(ctx, TableDir(name), func(p objstore.Page) error {
		found = len(p.Objects) > 0 || len(p.Prefixes) > 0
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, fmt.Errorf("list %s: %w", TableDir(name), err)
	}
	return found, nil
}

// readMarker returns the marker's bytes, object and parsed value. A marker
// that does not parse returns its bytes and object with an ErrInvalidMarker
// error; a missing one returns objstore.ErrNotFound.
func (ns *Namespace) readMarker(ctx context.Context, name string) ([]byte, objstore.Object, Marker, error) {
	body, obj, err := ns.store.Get(ctx, MarkerKey(name))
	if err != nil {
		return nil, objstore.Object{}, Marker{}, fmt.Errorf("read marker %s: %w", MarkerKey(name), err)
	}
	m, err := ParseMarker(body)
	if err != nil {
		return body, obj, Marker{}, fmt.Errorf("marker %s: %w", MarkerKey(name), err)
	}
	return body, obj, m, nil
}
