package ledger

import (
	"fmt"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// CheckLocation checks the ledger location URI (an absolute path, file:// or
// s3:// URI) and refuses one inside a table directory: a segment ending in
// ".lance" would put ledger files among a table's data, where a purge of
// that table deletes them and Lance may trip over them.
func CheckLocation(uri string) error {
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return fmt.Errorf("ledger location: %w", err)
	}
	path := loc.Path
	if loc.Bucketed() {
		path = loc.Prefix
	}
	for _, seg := range strings.Split(path, "/") {
		if strings.HasSuffix(seg, ".lance") {
			return fmt.Errorf("ledger location %s: inside table directory %q; put the ledger outside every table, e.g. beside the database root", loc, seg)
		}
	}
	return nil
}
