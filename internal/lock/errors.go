package lock

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLocked: another holder has an unexpired lease. Acquire returns it
	// wrapped in a *LockedError that names the holder.
	ErrLocked = errors.New("locked")
	// ErrLost: the lease is no longer ours, or may not be (a renewal lost a
	// race, or the deadline passed without a successful renewal). Work under
	// the lease must stop.
	ErrLost = errors.New("lease lost")
)

// LockedError reports who holds the lease, so an operator knows whom to wait
// for and until when.
type LockedError struct {
	Key    string
	Holder Info
	// TakeoverAt is when, by the store's clock, the lease may be taken
	// over if its holder does not renew it.
	TakeoverAt time.Time
}

// Never reports a lease that is never taken over (a TTL of centuries).
func (e *LockedError) Never() bool { return e.TakeoverAt.Sub(e.Holder.Modified) >= neverAfter }

func (e *LockedError) Error() string {
	if e.Never() {
		return fmt.Sprintf("lock %q is held by %s (generation %d) with a TTL of centuries: it is never taken over; if no process holds it, delete %s by hand",
			e.Key, e.Holder.Owner, e.Holder.Generation, e.Key)
	}
	at := e.TakeoverAt.UTC().Format(time.RFC3339)
	return fmt.Sprintf("lock %q is held by %s (generation %d); if that process is gone, the lease can be taken over from %s by the store's clock",
		e.Key, e.Holder.Owner, e.Holder.Generation, at)
}

// Unwrap lets callers test errors.Is(err, ErrLocked).
func (e *LockedError) Unwrap() error { return ErrLocked }

// corruptError explains a lease that does not parse. Acquire fails closed on
// it: an unreadable lease might be a newer holder's, so only an operator may
// remove it.
func corruptError(key string, err error) error {
	return fmt.Errorf("lock %q holds an unreadable lease, refusing to take it over (inspect the object and delete it if no process holds the lock): %w", key, err)
}
