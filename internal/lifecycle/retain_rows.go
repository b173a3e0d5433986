package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns a retention run's part of a table's external commit store
// (the DynamoDB rows of an s3+ddb:// root): the rows of the versions it
// removed go once their manifests are gone (step 6), so the commit store
// does not grow with every version ever written, and a version still
// listed never loses its row. The newest version's row is never deleted:
// it is where a writer reads the table's latest version from.
//
// Lance's own cleanup deletes manifests and leaves their rows for good
// (lance #3494), so a run also sweeps the rows of versions older than the
// newest that no manifest lists any more. A writer's commit in flight is
// never one of them: it commits a version above the newest listed, and
// writes its row before its manifest.

// deleteRows deletes the rows of versions, the run's removed versions after
// their manifests, and the rows left by versions no longer listed, keeping
// any at or above t's newest version and any whose manifest path is not
// under the table. A run that removes no version sweeps only when sweep
// says so: it took over the record of a run cut short, whose removed
// versions' rows may be left.
func (d *retainDeleter) deleteRows(ctx context.Context, t *lance.Table, versions []uint64, sweep bool) error {
	rows := objstore.CommitRowsOf(d.ns.store)
	if rows == nil || (len(versions) == 0 && !sweep) || t == nil || len(t.Versions) == 0 {
		return nil
	}
	newest := t.Latest().Number
	del := map[uint64]bool{}
	for _, v := range versions {
		if v < newest {
			del[v] = true
		}
	}
	orphans, err := d.orphanRows(ctx, rows, t, newest)
	if err != nil {
		return err
	}
	for _, v := range orphans {
		del[v] = true
	}
	if len(del) == 0 {
		return nil
	}
	if err := d.g.check(ctx); err != nil {
		return err
	}
	old := slices.Sorted(maps.Keys(del))
	if err := rows.DeleteRows(ctx, tableKey(d.name), old); err != nil {
		return fmt.Errorf("retain %q: delete the commit rows of removed versions (%s): %w", d.name, rows.TableKey(tableKey(d.name)), err)
	}
	d.ns.log.InfoContext(ctx, "deleted the commit rows of removed versions", "table", DisplayName(d.name),
		"base_uri", rows.TableKey(tableKey(d.name)), "rows", len(old), "left_by_earlier_cleanups", len(orphans))
	return nil
}

// orphanRows are the versions of the table's rows below newest whose
// manifests t does not list: rows an earlier cleanup (Lance's) left. A
// row naming a manifest outside the table is not the table's: left alone.
func (d *retainDeleter) orphanRows(ctx context.Context, rows objstore.CommitRows, t *lance.Table, newest uint64) ([]uint64, error) {
	listed := make(map[uint64]bool, len(t.Versions))
	for _, v := range t.Versions {
		listed[v.Number] = true
	}
	key := rows.TableKey(tableKey(d.name))
	var out []uint64
	err := rows.TableRows(ctx, tableKey(d.name), func(page []objstore.CommitRow) error {
		for _, r := range page {
			if r.Version < newest && !listed[r.Version] && strings.HasPrefix(r.Path, key+"/") {
				out = append(out, r.Version)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retain %q: read the commit rows (%s): %w", d.name, key, err)
	}
	return out, nil
}
