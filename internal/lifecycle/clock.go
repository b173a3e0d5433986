package lifecycle

import (
	"context"
	"fmt"
	"time"
)

// This file owns the one-clock rule: every comparison that allows a
// deletion (a table being due) reads the store's clock, the one that
// stamped the marker's LastModified. A host clock days off changes
// nothing; Options.Now is used for logs and reports only.

// storeNow reads the store's clock.
func (ns *Namespace) storeNow(ctx context.Context) (time.Time, error) {
	now, err := ns.store.Now(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock of %s: %w", ns.store.URI(), err)
	}
	return now, nil
}

// dueAt is when a marker read with LastModified lm becomes due: once both
// the dropper's deleted_at_ms + ttl_ms and the store's own LastModified +
// ttl have passed. A dropper whose clock ran days behind wrote an early
// deleted_at; the store's stamp keeps its table for the whole TTL anyway.
// (S3 truncates LastModified to the second; a TTL is hours or days, so that
// second is not worth a rule of its own here, unlike in a lease takeover.)
func dueAt(m Marker, lm time.Time, def time.Duration) time.Time {
	at := m.PurgeAfter(def)
	if lm.IsZero() {
		return at
	}
	if byStore := lm.Add(m.TTL(def)); byStore.After(at) && !byStore.Before(lm) {
		return byStore
	}
	return at
}
