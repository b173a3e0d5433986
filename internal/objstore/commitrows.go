package objstore

import "context"

// This file owns the contract of an external commit store: the rows a
// Lance table commits through beside its objects (the DynamoDB table of an
// s3+ddb:// root), one row per version. A store whose tables have one
// implements CommitRows; the wrappers above it (retries, metrics, tracing,
// test seams) reach it through Unwrap (CommitRowsOf).

// CommitRow is one row of a table in its external commit store.
type CommitRow struct {
	// Version is the table version the row commits.
	Version uint64
	// Path is the manifest the row names, as Lance writes it: the key
	// path inside the bucket, the root's prefix included.
	Path string
}

// CommitRows is a store's external commit store. Tables are named by their
// directory key relative to the store's root, without a trailing "/"
// ("t.lance"), the way every Store method names keys.
type CommitRows interface {
	// TableRows calls fn with each page of the table's rows, in version
	// order, read consistently. An error of fn stops it and is returned
	// unchanged.
	TableRows(ctx context.Context, table string, fn func([]CommitRow) error) error
	// DeleteRows deletes the table's rows of versions (any number: the
	// store batches them); a missing row counts as deleted. Every request
	// asks ctx's fence first (Fenced).
	DeleteRows(ctx context.Context, table string, versions []uint64) error
	// TableKey is the key the store files the table's rows under (Lance's
	// base_uri), for errors and logs.
	TableKey(table string) string
}

// CommitRowsOf returns the external commit store of s or of the first store
// it wraps (through Unwrap() Store) that has one, or nil: most stores
// commit through their objects alone.
func CommitRowsOf(s Store) CommitRows {
	for s != nil {
		if r, ok := s.(CommitRows); ok {
			return r
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}
