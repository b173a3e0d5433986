package ledger

import (
	"context"
	"fmt"
	"os"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/stack"
)

// CheckLocation checks the ledger location URI (any root URI all.Default()
// accepts) and refuses one inside a table directory: a segment ending in
// ".lance" would put ledger files among a table's data, where a purge of
// that table deletes them and Lance may trip over them.
func CheckLocation(uri string) error {
	loc, err := all.ParseLocation(uri)
	if err != nil {
		return fmt.Errorf("ledger location: %w", err)
	}
	if seg, in := lifecycle.TableDirIn(loc.KeyPath()); in {
		return fmt.Errorf("ledger location %s: inside table directory %q; put the ledger outside every table, e.g. beside the database root", loc, seg)
	}
	return nil
}

// OpenLocation opens the ledger location uri for a pass to write, through
// the store stack so (the pass's pacer, metrics and tracing): it checks the
// location first and creates a local directory that does not exist yet.
func OpenLocation(ctx context.Context, uri string, storageOptions map[string]string, so stack.Options) (objstore.Store, error) {
	if err := CheckLocation(uri); err != nil {
		return nil, err
	}
	if l, err := all.ParseLocation(uri); err == nil && l.Path != "" { // a directory of this host
		if err := os.MkdirAll(l.Path, 0o755); err != nil {
			return nil, fmt.Errorf("ledger location %s: %w", l, err)
		}
	}
	// A journal's lease renews past any pacing, as a table's does: lease
	// traffic never queues behind bulk work, or a throttled store would
	// lose the journal and stop the pass's purges.
	paced := so.Unpaced
	so.Unpaced = func(key string) bool { return isJournalLease(key) || paced != nil && paced(key) }
	return stack.Open(ctx, uri, storageOptions, so)
}
