package lifecycle

import (
	"context"
	"fmt"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns a retention run's part of a table's external commit store
// (the DynamoDB rows of an s3+ddb:// root): the rows of the versions it
// removed go once their manifests are gone (step 6), so the commit store
// does not grow with every version ever written, and a version still
// listed never loses its row. The newest version's row is never deleted:
// it is where a writer reads the table's latest version from.

// deleteRows deletes the rows of versions, the run's removed versions after
// their manifests, keeping any at or above t's newest version.
func (d *retainDeleter) deleteRows(ctx context.Context, t *lance.Table, versions []uint64) error {
	rows := objstore.CommitRowsOf(d.ns.store)
	if rows == nil || len(versions) == 0 || len(t.Versions) == 0 {
		return nil
	}
	newest := t.Latest().Number
	var old []uint64
	for _, v := range versions {
		if v < newest {
			old = append(old, v)
		}
	}
	if len(old) == 0 {
		return nil
	}
	if err := d.g.check(ctx); err != nil {
		return err
	}
	if err := rows.DeleteRows(ctx, tableKey(d.name), old); err != nil {
		return fmt.Errorf("retain %q: delete the commit rows of removed versions (%s): %w", d.name, rows.TableKey(tableKey(d.name)), err)
	}
	d.ns.log.InfoContext(ctx, "deleted the commit rows of removed versions", "table", d.name,
		"base_uri", rows.TableKey(tableKey(d.name)), "rows", len(old))
	return nil
}
