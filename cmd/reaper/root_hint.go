package main

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/worker"
)

// This file owns what a command says of a root in which it found no
// table. A new database is empty, and says so; but a root one level too
// high (a directory of databases) or too low (a table's own directory) is
// a mistake a first run makes, and "no tables in this root" with exit 0
// hides it. Only an empty root is looked at again: a listing of its top
// level, then one of each of its first hintChildren directories.

// hintChildren bounds the directories below an empty root looked into.
const hintChildren = 20

// rootHint is the usage error for root (as the user wrote it), in which op
// found no table, when the root is a table directory or directories below
// it hold tables; nil when it looks like an empty database, or cannot be
// listed (the command reported what it could).
func rootHint(ctx context.Context, op string, store objstore.Store, root string) error {
	var dirs []string
	err := store.List(ctx, "", func(pg objstore.Page) error {
		dirs = append(dirs, pg.Prefixes...)
		return nil
	})
	if err != nil {
		return nil
	}
	if isTableDir(root, dirs) {
		return usagef("%s: %s is a table directory, not a database root: pass the directory that holds it, --root %s",
			op, root, parentRoot(root))
	}
	var found []string
	tables := 0
	for _, d := range dirs {
		if strings.HasPrefix(d, "_") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, lifecycle.TableSuffix+"/") {
			continue
		}
		if len(found) == hintChildren {
			break
		}
		n := 0
		_ = store.List(ctx, d, func(pg objstore.Page) error {
			for _, p := range pg.Prefixes {
				if strings.HasSuffix(p, lifecycle.TableSuffix+"/") {
					n++
				}
			}
			return nil
		})
		if n > 0 {
			found = append(found, d)
			tables += n
		}
	}
	switch len(found) {
	case 0:
		return nil
	case 1:
		return usagef("%s: %s holds no tables, but %s below it holds %d: pass --root %s", op, root, found[0], tables,
			childRoot(root, found[0]))
	}
	shown := found[:min(len(found), 3)]
	more := ""
	if len(found) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(found)-len(shown))
	}
	return usagef("%s: %s holds no tables, but directories below it do (%s%s: %d tables): pass one of them as --root, e.g. --root %s, or cover each with the discover pattern %s in a configuration",
		op, root, strings.Join(shown, ", "), more, tables, childRoot(root, found[0]), childRoot(root, "*")+"/")
}

// isTableDir reports whether root, whose top-level directories are dirs,
// is a Lance table's own directory.
func isTableDir(root string, dirs []string) bool {
	if strings.HasSuffix(strings.TrimSuffix(root, "/"), lifecycle.TableSuffix) {
		return true
	}
	for _, d := range dirs {
		if d == lance.VersionsDir {
			return true
		}
	}
	return false
}

// parentRoot is the root one level up from root, as the user wrote it.
func parentRoot(root string) string {
	r := strings.TrimSuffix(root, "/")
	if !strings.Contains(r, "://") {
		return filepath.Dir(r)
	}
	if i := strings.LastIndex(r, "/"); i > strings.Index(r, "://")+2 {
		return r[:i]
	}
	return r
}

// childRoot is dir (a prefix ending in "/", or a pattern) below root.
func childRoot(root, dir string) string {
	dir = strings.TrimSuffix(dir, "/")
	if !strings.Contains(root, "://") {
		return filepath.Join(root, dir)
	}
	return strings.TrimSuffix(root, "/") + "/" + path.Clean(dir)
}

// emptyRootHint is rootHint for the one root of a plain pass (a --root,
// no names, no configuration file) that found no table there.
func emptyRootHint(ctx context.Context, op string, rt *runtime, rep *worker.Report, names []string, fromFile bool) error {
	if fromFile || len(names) > 0 || len(rt.cfg.Roots) != 1 || len(rt.cfg.Discover) > 0 || len(rep.Roots) != 1 {
		return nil
	}
	rr := rep.Roots[0]
	if rr.Err != nil || rr.Plan.Tables > 0 {
		return nil
	}
	root := rt.cfg.Roots[0]
	store, err := rt.worker.Open(ctx, roots.Root{URI: root.URI, StorageOptions: root.StorageOptions})
	if err != nil {
		return nil
	}
	return rootHint(ctx, op, store, root.URI)
}
