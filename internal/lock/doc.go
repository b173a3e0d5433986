// Package lock is reaper's lifecycle lock across processes and machines: a
// lease stored as one small JSON object in the same object store it guards.
// docs/PROTOCOL.md states the protocol and why it holds.
//
// The store's conditional writes are the only synchronisation: a lease is
// created with PutIfAbsent, renewed and taken over with PutIfMatch on the
// ETag last seen, and released with DeleteIfMatch. No host's wall clock takes
// part: a contender takes over only when the store's own clock has passed
// the lease's LastModified plus its TTL, the store's time resolution and a
// skew allowance; the holder measures its own lease on a clock that counts a
// paused or suspended process (CLOCK_BOOTTIME) from before it sent its last
// write, and stops Margin before the TTL runs out.
//
// A Lease is a fence (objstore.Fence): its Context carries it, and every
// backend asks it immediately before each mutating request, so a holder
// frozen between two steps sends nothing once it may have lost the lease.
// Lease.Verify checks the lease against the store before a destructive step.
package lock
