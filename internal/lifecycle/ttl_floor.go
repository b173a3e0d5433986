package lifecycle

import (
	"errors"
	"fmt"
	"time"
)

// This file owns the TTL floor: the one predicate the worker's short_ttl
// rail, the CLI's warnings (drop, status) and the public API's purge all
// apply. A TTL of seconds is far more often a mistake than an intent, and
// a purge cannot be undone.

// DefaultMinTTL is the TTL floor unless configured (safety.min_ttl).
const DefaultMinTTL = time.Hour

// ErrShortTTL: a purge kept the table because its marker's TTL is below
// the floor it was given (PurgeOptions.MinTTL). Nothing was deleted.
var ErrShortTTL = errors.New("ttl below the minimum ttl")

// BelowTTLFloor reports whether a purge keeps s for its short TTL: s has a
// marker whose TTL is below floor, its purge has not committed (a committed
// purge is finished whatever its TTL: it passed the floor when it
// committed, and the table is partly gone) and it has data (an orphan
// marker has nothing left to protect).
func BelowTTLFloor(s TableStatus, floor time.Duration) bool {
	return s.Marker != nil && s.TTL < floor && s.Commit == nil && s.State != StateOrphanMarker
}

// checkTTLFloor is BelowTTLFloor for a purge that walked the table: st is
// the marker it judged, objects what the walk found.
func checkTTLFloor(name string, st TableStatus, objects int64, floor time.Duration) error {
	if objects == 0 {
		st.State = StateOrphanMarker
	}
	if floor <= 0 || !BelowTTLFloor(st, floor) {
		return nil
	}
	return fmt.Errorf("purge %q: %w: ttl %s is below %s; nothing was deleted", name, ErrShortTTL, st.TTL, floor)
}
