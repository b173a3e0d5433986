package objstore

import (
	"context"
	"strings"
)

// This file owns how far a delete prunes. On a store with directories
// (local) a delete removes the directories it emptied, up to the root's: a
// purge empties a table for good. A retention run deletes beside LanceDB
// writers and removes only what Lance's own cleanup removes, the emptied
// directories below a table's _indices/ (each index has a directory of its
// own, written once): never _indices/ itself, _deletions/ or another
// directory a writer may be about to write into.

type pruneWithinKey struct{}

// WithPruneWithin returns ctx carrying prefix (ending in "/"): a delete made
// with it removes a directory it emptied only while that directory is
// strictly below prefix, and stops at the first that is not. Stores
// without directories ignore it.
func WithPruneWithin(ctx context.Context, prefix string) context.Context {
	return context.WithValue(ctx, pruneWithinKey{}, prefix)
}

// PruneAllowed reports whether a delete made with ctx may remove the
// emptied directory dirKey (ending in "/"): always without WithPruneWithin,
// else only strictly below its prefix.
func PruneAllowed(ctx context.Context, dirKey string) bool {
	prefix, ok := ctx.Value(pruneWithinKey{}).(string)
	return !ok || (len(dirKey) > len(prefix) && strings.HasPrefix(dirKey, prefix))
}
