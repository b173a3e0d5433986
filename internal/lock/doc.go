// Package lock is reaper's lifecycle lock across processes and machines: a
// lease stored as one small JSON object in the same object store it guards.
//
// The store's conditional writes are the only synchronisation: a lease is
// created with PutIfAbsent, renewed and taken over with PutIfMatch on the
// ETag last seen, and released with DeleteIfMatch. Nothing relies on clocks
// agreeing exactly: the holder gives up its lease DriftMargin before the
// expiry it wrote, and a rival takes over only after that expiry has passed
// on its own clock. The generation, bumped on every takeover, is a fencing
// token for anything that wants to check it.
//
// A holder must call Lease.Check before every destructive step and do its work
// under Lease.Context, which is cancelled as soon as the lease may have been
// lost; working under a lease that may be gone is how locks stop protecting.
package lock
