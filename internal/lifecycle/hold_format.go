package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// HoldSuffix ends a legal hold: <root>/<name>.reaper-hold. While it exists
// the table is never purged, whatever its TTL. It sits beside the marker so
// the root listing shows it without a request per table. This file owns the
// hold format (docs/FORMAT.md).
const HoldSuffix = ".reaper-hold"

// ErrHeld: a legal hold blocks the purge.
var ErrHeld = errors.New("table under legal hold")

// HoldKey is the key of a table's legal hold.
func HoldKey(name string) string { return name + HoldSuffix }

// Hold is the body of a legal hold.
type Hold struct {
	Reason   string `json:"reason"`
	HeldBy   string `json:"held_by"`
	HeldAtMs int64  `json:"held_at_ms"`
	// Folder: the hold is a folder <name>.reaper-hold/ (mkdir on a local
	// disk, "Create folder" in a console, or any object under that name),
	// not an object of reaper's; it holds all the same, and is removed by
	// hand.
	Folder bool `json:"-"`
}

// parseHold reads a hold body. A body that does not parse still holds: a
// hold fails closed, so the returned Hold carries the parse problem.
func parseHold(body []byte) Hold {
	var h Hold
	if err := json.Unmarshal(body, &h); err != nil {
		return Hold{Reason: fmt.Sprintf("unreadable hold (%v); it still blocks purges", err)}
	}
	return h
}

// PlaceHold puts a legal hold on a table that has data or a marker. An
// existing hold, in any form, is kept as it is (ErrHeld), so its reason
// and date survive.
func (ns *Namespace) PlaceHold(ctx context.Context, name, reason string) (Hold, error) {
	if err := ValidateName(name); err != nil {
		return Hold{}, err
	}
	ctx = withTable(ctx, name)
	if reason == "" {
		return Hold{}, fmt.Errorf("hold %q: a reason is required (for example a ticket or case number)", name)
	}
	if h, err := ns.readHold(ctx, name); err != nil {
		return Hold{}, fmt.Errorf("hold %q: %w", name, err)
	} else if h != nil {
		return Hold{}, fmt.Errorf("hold %q: %w already (%s)", name, ErrHeld, h.Reason)
	}
	exists, err := ns.hasData(ctx, name)
	if err != nil {
		return Hold{}, fmt.Errorf("hold %q: %w", name, err)
	}
	if !exists {
		if _, err := ns.store.Head(ctx, MarkerKey(name)); err != nil {
			return Hold{}, fmt.Errorf("hold %q: %w: no data and no marker", name, ErrNotFound)
		}
	}
	now, err := ns.storeNow(ctx)
	if err != nil {
		return Hold{}, fmt.Errorf("hold %q: %w", name, err)
	}
	h := Hold{Reason: reason, HeldBy: ns.opts.Owner, HeldAtMs: now.UnixMilli()}
	body, _ := json.Marshal(h)
	if _, err := ns.store.PutIfAbsent(ctx, HoldKey(name), body); err != nil {
		if errors.Is(err, objstore.ErrPrecondition) {
			return Hold{}, fmt.Errorf("hold %q: %w already; release it first to change the reason", name, ErrHeld)
		}
		return Hold{}, fmt.Errorf("hold %q: write hold: %w", name, err)
	}
	ns.log.InfoContext(ctx, "legal hold placed", "table", name, "reason", reason)
	return h, nil
}

// ReleaseHold removes a table's legal hold; ErrNotFound when it has none.
func (ns *Namespace) ReleaseHold(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	ctx = withTable(ctx, name)
	h, err := ns.readHold(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("release hold on %q: %w", name, err)
	case h == nil:
		return fmt.Errorf("release hold on %q: %w: the table has no legal hold", name, ErrNotFound)
	case h.Folder:
		return fmt.Errorf("release hold on %q: %s; reaper did not write it and does not remove it", name, h.Reason)
	}
	obj, err := ns.store.Head(ctx, HoldKey(name))
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("release hold on %q: %w: the table has no legal hold", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("release hold on %q: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, HoldKey(name), obj.ETag); err != nil {
		return fmt.Errorf("release hold on %q: %w", name, err)
	}
	ns.log.InfoContext(ctx, "legal hold released", "table", name)
	return nil
}

// readHold returns the table's hold, or nil without one. A hold is the
// object <name>.reaper-hold or a folder of that name: on a local disk a
// directory (even empty, which the object read reports as a folder); in an
// object store a console's folder object "<name>.reaper-hold/" or any
// object under it (which the listing finds). The read and the listing go
// out together, one request each. A hold that cannot be read fails closed:
// an oversized one holds, any other error is returned.
func (ns *Namespace) readHold(ctx context.Context, name string) (*Hold, error) {
	key := HoldKey(name)
	var (
		wg              sync.WaitGroup
		body            []byte
		getErr, listErr error
		folder          bool
	)
	wg.Go(func() { body, _, getErr = ns.store.Get(ctx, key, MaxControlBytes) })
	wg.Go(func() {
		listErr = ns.store.List(ctx, key+"/", func(p objstore.Page) error {
			if len(p.Objects)+len(p.Prefixes) > 0 {
				folder = true
				return errStop
			}
			return nil
		})
		if errors.Is(listErr, errStop) {
			listErr = nil
		}
	})
	wg.Wait()
	switch {
	case getErr == nil:
		h := parseHold(body)
		return &h, nil
	case folder || errors.Is(getErr, objstore.ErrIsFolder):
		return folderHold(name), nil
	case errors.Is(getErr, objstore.ErrTooLarge):
		return &Hold{Reason: fmt.Sprintf("unreadable hold (%v); it still blocks purges", getErr)}, nil
	case !errors.Is(getErr, objstore.ErrNotFound):
		return nil, fmt.Errorf("read hold %s: %w", key, getErr)
	case listErr != nil:
		return nil, fmt.Errorf("read hold %s/: %w", key, listErr)
	}
	return nil, nil
}

// folderHold is the hold a folder <name>.reaper-hold/ makes.
func folderHold(name string) *Hold {
	return &Hold{Folder: true, Reason: fmt.Sprintf("held by the folder %s/; remove the folder to release it", HoldKey(name))}
}

// heldError explains a blocked purge.
func heldError(op, name string, h *Hold) error {
	at := ""
	if h.HeldAtMs > 0 {
		at = " since " + time.UnixMilli(h.HeldAtMs).UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%s %q: %w%s (%s); run 'reaper release' to lift it", op, name, ErrHeld, at, h.Reason)
}
