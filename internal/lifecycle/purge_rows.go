package lifecycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns a purge's part of a table's external commit store (the
// DynamoDB rows of an s3+ddb:// root, objstore.CommitRows): the rows are
// read under the lease before the identity fence's walk (step 3), and deleted after
// the table's objects are gone and before the marker (step 8), so that a
// purged table leaves no row behind (LanceDB would call a re-created table
// existing) and a crash before the marker leaves rows a re-run deletes.

// seenRows is what step 3 read of the table's rows.
type seenRows struct {
	rows objstore.CommitRows // nil: the store has no external commit store
	// newest is the newest version a row committed; any: there was a row.
	newest uint64
	any    bool
}

// readRows reads the table's rows under the lease: the newest version they
// commit is the newest a writer made before the purge looked. A row it
// cannot read stops the purge before anything is deleted.
func (ns *Namespace) readRows(ctx context.Context, name string) (seenRows, error) {
	seen := seenRows{rows: objstore.CommitRowsOf(ns.store)}
	if seen.rows == nil {
		return seen, nil
	}
	err := seen.rows.TableRows(ctx, tableKey(name), func(page []objstore.CommitRow) error {
		for _, r := range page {
			seen.newest, seen.any = max(seen.newest, r.Version), true
		}
		return nil
	})
	if err != nil {
		return seen, fmt.Errorf("purge %q: %w", name, err)
	}
	return seen, nil
}

// deleteRows deletes the table's rows once its objects are gone. A row of a
// version newer than step 3 saw is a writer that committed after the drop,
// and a row naming a manifest outside the table is not the table's (two
// buckets sharing one DynamoDB table and one path share rows): either stops
// the purge with nothing more deleted. The rows are read again after the
// deletes: one left is a writer too.
func (ns *Namespace) deleteRows(ctx context.Context, name string, seen seenRows) error {
	if seen.rows == nil {
		return nil
	}
	key := seen.rows.TableKey(tableKey(name))
	var versions []uint64
	err := seen.rows.TableRows(ctx, tableKey(name), func(page []objstore.CommitRow) error {
		for _, r := range page {
			if err := ownRow(name, key, seen, r); err != nil {
				return err
			}
			versions = append(versions, r.Version)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(versions) == 0 {
		return nil
	}
	if err := seen.rows.DeleteRows(ctx, tableKey(name), versions); err != nil {
		return fmt.Errorf("purge %q: delete the table's commit rows (%s): %w", name, key, err)
	}
	ns.log.InfoContext(ctx, "deleted the table's commit rows", "table", name, "base_uri", key, "rows", len(versions))
	left := 0
	err = seen.rows.TableRows(ctx, tableKey(name), func(page []objstore.CommitRow) error {
		left += len(page)
		return nil
	})
	if err != nil {
		return err
	}
	if left > 0 {
		return &ConflictError{Name: name, Reason: fmt.Sprintf("%d commit row(s) of %s appeared while the purge deleted them: a writer committed after the drop; the marker and the purge commit are kept and the table needs an operator", left, key)}
	}
	return nil
}

// ownRow refuses a row the purge must not delete: one newer than any step
// 3 saw, or one whose manifest is not under the table's key.
func ownRow(name, key string, seen seenRows, r objstore.CommitRow) error {
	if !seen.any || r.Version > seen.newest {
		return &ConflictError{Name: name, Reason: fmt.Sprintf("commit row of version %d of %s is newer than any the purge saw: a writer committed after the drop; the marker and the purge commit are kept and the table needs an operator", r.Version, key)}
	}
	if !strings.HasPrefix(r.Path, key+"/") {
		return &ConflictError{Name: name, Reason: fmt.Sprintf("commit row of version %d of %s names %q, outside the table: not this table's row; delete it by hand if it is, then run purge again", r.Version, key, r.Path)}
	}
	return nil
}

// tableKey is the table's directory key without its trailing "/": what
// CommitRows names a table by.
func tableKey(name string) string { return strings.TrimSuffix(TableDir(name), "/") }
