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
// clock. deleted_at_ms is the store's clock, so a host whose clock is off
// still writes a true drop time.
func (ns *Namespace) Drop(ctx context.Context, name string, ttl time.Duration) (Marker, error) {
	if err := ValidateNewName(name); err != nil {
		return Marker{}, err
	}
	ctx = withTable(ctx, name)
	if ttl <= 0 {
		ttl = ns.opts.DefaultTTL
	}
	if err := ns.checkIsTable(ctx, name); err != nil {
		return Marker{}, fmt.Errorf("drop %q: %w", name, err)
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
	now, err := ns.storeNow(ctx)
	if err != nil {
		return Marker{}, fmt.Errorf("drop %q: %w", name, err)
	}
	body := EncodeMarker(now, ttl)
	if _, err := ns.store.PutIfAbsent(ctx, MarkerKey(name), body); err != nil {
		if errors.Is(err, objstore.ErrPrecondition) {
			return Marker{}, fmt.Errorf("drop %q: %w; the existing marker was left as it is", name, ErrAlreadyDeleted)
		}
		return Marker{}, fmt.Errorf("drop %q: write marker: %w", name, err)
	}
	ns.log.InfoContext(ctx, "table soft-deleted", "table", name, "ttl", ttl.String())
	return Marker{DeletedAtMs: now.UnixMilli(), TTLMs: ttl.Milliseconds(), HasTTL: true}, nil
}

// checkIsTable refuses a name whose <name>.lance is an object (a symbolic
// link or a file on a local disk) rather than a directory: following a
// link could reach any directory, a live table of the same root included.
// It costs one request.
func (ns *Namespace) checkIsTable(ctx context.Context, name string) error {
	_, err := ns.store.Head(ctx, tablePath(name))
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", tablePath(name), err)
	}
	return fmt.Errorf("%w: %s", ErrNotATable, notATableProblem(name))
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
	body, obj, err := ns.store.Get(ctx, MarkerKey(name), MaxControlBytes)
	if errors.Is(err, objstore.ErrTooLarge) {
		return nil, objstore.Object{}, Marker{}, fmt.Errorf("marker %s: %w: %w", MarkerKey(name), ErrInvalidMarker, err)
	}
	if err != nil {
		return nil, objstore.Object{}, Marker{}, fmt.Errorf("read marker %s: %w", MarkerKey(name), err)
	}
	m, err := ParseMarker(body)
	if err != nil {
		return body, obj, Marker{}, fmt.Errorf("marker %s: %w", MarkerKey(name), err)
	}
	return body, obj, m, nil
}
