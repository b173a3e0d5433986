package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how reaper tells a manifest-layout directory that is a
// table from one that is not, without reading the catalog: by what the
// directory holds. A status lists the top of each such directory once (one
// request a table); a plan does not, and the retention read, which lists
// the top of the directory anyway (lance.ReadTable), refuses what is not a
// table (no _versions/, or .lance-deregistered): nothing of it is planned.
//
// Why not the catalog: __manifest is a Lance table whose rows live in
// Lance-format data files, which the reader does not decode. What the
// structure alone can get wrong is harmless to a retention run: a table
// mid-creation has one version (nothing to remove), a directory LanceDB is
// deleting (dropTable removes the catalog's row first) loses its files to
// LanceDB whatever reaper does, and a table renamed in place keeps its
// directory, so reaper shows its old object id but cleans the same table
// LanceDB lists (docs/RETENTION.md, "Tables in namespaces").

// catalogNote is the note of the catalog's status row.
const catalogNote = "LanceDB's namespace catalog (a Lance table it commits every namespace operation to): reaper counts its versions, reads nothing else of it and never deletes from it"

// clashProblem explains a namespaced table beside a root table of the
// same stem.
func clashProblem(name string) string {
	stem := controlStem(name)
	return fmt.Sprintf("its control keys (%s, %s) are those of the root table %s%s beside it: reaper leaves it alone (never cleaned) until one of them is renamed",
		LockKey(name), RetainKey(name), stem, TableSuffix)
}

// probeNamespaced lists the top of a namespaced table's directory and sets
// what it holds: a table (_versions/), a deregistered one, or no table (a
// name LanceDB reserved, a table being created or dropped, a directory not
// LanceDB's). One listing.
func (ns *Namespace) probeNamespaced(ctx context.Context, s *TableStatus) error {
	if s.State != StateExists {
		return nil // unreadable lease or hold: already reported
	}
	dir := TableDir(s.Name)
	var versions, reserved, deregistered bool
	err := ns.store.List(ctx, dir, func(p objstore.Page) error {
		for _, pre := range p.Prefixes {
			versions = versions || pre == dir+lance.VersionsDir
		}
		for _, o := range p.Objects {
			switch rel := strings.TrimPrefix(o.Key, dir); {
			case rel == DeregisteredFile:
				deregistered = true
			case rel == ReservedFile:
				reserved = true
			case strings.HasPrefix(rel, lance.VersionsDir):
				versions = true // a store that lists a directory's objects
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return err
		}
		s.State, s.Problem = StateUnreadable, fmt.Sprintf("list %s: %v", dir, err)
		return nil
	}
	switch {
	case deregistered:
		s.State, s.Problem = StateDeregistered, deregisteredNote(dir)
	case !versions:
		s.State, s.HasData = StateNotATable, false
		s.Problem = notNamespacedTable(dir, reserved)
	}
	return nil
}

// deregisteredNote explains StateDeregistered.
func deregisteredNote(dir string) string {
	return fmt.Sprintf("%s%s: LanceDB deregistered the table and keeps its data for re-registration; reaper never cleans it", dir, DeregisteredFile)
}

// notNamespacedTable explains a manifest-layout directory that holds no
// versions.
func notNamespacedTable(dir string, reserved bool) string {
	if reserved {
		return fmt.Sprintf("%s holds %s and no %s: a name LanceDB reserved (a table being created, or a creation that failed), not a table; never cleaned", dir, ReservedFile, lance.VersionsDir)
	}
	return fmt.Sprintf("%s holds no %s: not a Lance table (being dropped, or not LanceDB's); never cleaned", dir, lance.VersionsDir)
}
