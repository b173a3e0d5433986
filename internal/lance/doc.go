// Package lance reads the files and bytes of one Lance table directory on
// any objstore.Store: its versions (the manifests under _versions/), what
// each version references (data, deletion, transaction and index files), its
// tags and its branches, and the listing of every directory Lance's own
// cleanup manages. It knows Lance's format and nothing of reaper's lifecycle
// (markers, leases, TTLs): a retention plan is built on top of it
// (internal/retention).
//
// It fails closed: anything it does not understand (a feature flag, a
// manifest that does not parse, a file name it cannot classify, a base path
// outside the table, columns that may hold managed blobs) makes the table
// unsupported (ErrUnsupported, with the reason), never a guess. The layout
// facts it relies on are in docs/FORMAT.md ("Lance tables"), with the
// Lance version they were checked against.
package lance
