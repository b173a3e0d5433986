package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns what version retention keeps of a table for the other
// tables of its root: a shallow clone (LanceDB's cloneTable, its default)
// reads its source's files through a base path naming the source. Lance's
// own cleanup of the source deletes them and the clone's versions no longer
// read; reaper never cleans the clone (it is unsupported), and keeps in the
// source every file any table of the root reads through a base path naming
// it. The clones are known once every table of the root has been read:
// a pass plans every live table first (PlanTableRetention hands back what
// a clone reads elsewhere, RetentionPlan.Bases), then protects each plan
// (Protect) before anything runs; a run of one table alone
// (RetainOptions.Protected nil) reads the root's other tables itself.

// Protected is what other tables of the root read of one table through
// base paths: file keys relative to its directory and index uuids; Whole
// when a base path names it without being a dataset root (what it reads
// is not known: nothing of the table may be deleted).
type Protected struct {
	Keys, Indices map[string]bool
	Whole         bool
	// By names the tables that read them.
	By []string
}

// ProtectedBy maps each table of the root (by name) to what the clones
// among plans read of it.
func (ns *Namespace) ProtectedBy(plans []RetentionPlan) map[string]*Protected {
	out := map[string]*Protected{}
	for _, pl := range plans {
		ns.addBases(out, pl.Name, pl.Bases)
	}
	return out
}

// addBases adds what table by reads through base paths.
func (ns *Namespace) addBases(out map[string]*Protected, by string, bases []lance.BaseRef) {
	root := lance.TableURI(ns.store.URI(), "") + "/"
	for _, b := range bases {
		rest, ok := strings.CutPrefix(b.URI+"/", root)
		if !ok {
			continue // outside the root: not a table reaper cleans
		}
		dir, _, _ := strings.Cut(rest, "/")
		name, ok := NameOfDir(dir)
		if !ok || name == by {
			continue
		}
		p := out[name]
		if p == nil {
			p = &Protected{Keys: map[string]bool{}, Indices: map[string]bool{}}
			out[name] = p
		}
		if rest != dir+"/" {
			// A base path below the table's directory, not its root.
			p.Whole = true
		}
		p.Whole = p.Whole || b.Whole
		for _, k := range b.Keys {
			p.Keys[k] = true
		}
		for _, ix := range b.Indices {
			p.Indices[ix] = true
		}
		if !slices.Contains(p.By, by) {
			p.By = append(p.By, by)
		}
	}
}

// Protect drops from a plan (keys relative to the root) the files other
// tables read of it; with Whole, the plan deletes nothing. The versions it
// removes still go: their manifests are the table's own.
func (rp *RetentionPlan) Protect(p *Protected) {
	if p == nil || (rp.Result != RetentionPlanned && rp.Result != RetentionNothingToDo) {
		return
	}
	by := strings.Join(p.By, ", ")
	if p.Whole {
		rp.Result, rp.Reason = RetentionUnsupported, fmt.Sprintf("%s reads it through a base path that is not its root directory: nothing of it is deleted", by)
		rp.err = &lance.UnsupportedError{Dir: TableDir(rp.Name), Reason: rp.Reason}
		rp.Plan, rp.table = retention.Plan{Dir: rp.Plan.Dir, Cutoff: rp.Plan.Cutoff}, nil
		return
	}
	dir := TableDir(rp.Name)
	kept := rp.Plan.Files[:0:0]
	rp.Plan.Bytes = 0
	for _, f := range rp.Plan.Files {
		rel := strings.TrimPrefix(f.Key, dir)
		uuid, _, nested := strings.Cut(strings.TrimPrefix(rel, lance.IndicesDir), "/")
		if p.Keys[rel] || (nested && strings.HasPrefix(rel, lance.IndicesDir) && p.Indices[uuid]) {
			rp.KeptForOthers++
			continue
		}
		kept = append(kept, f)
		rp.Plan.Bytes += f.Bytes
	}
	rp.Plan.Files = kept
	if rp.KeptForOthers > 0 {
		rp.KeptFor = by
	}
	if len(rp.Plan.Files) == 0 && len(rp.Plan.Removed) == 0 {
		rp.Result = RetentionNothingToDo
	}
}

// protectionOf reads every other live table of the root for what it reads
// of name through base paths: a run of one table alone cannot know its
// clones otherwise. It costs a read of every manifest of every live table
// of the root; a pass has them already.
func (ns *Namespace) protectionOf(ctx context.Context, name string) (*Protected, error) {
	sts, err := ns.collect(ctx, nil, scanPlan)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var failed error
	out := map[string]*Protected{}
	sem := make(chan struct{}, DefaultRetentionReads)
	var wg sync.WaitGroup
	for _, s := range sts {
		if s.Name == name || notRetainable(s) != "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := lance.ReadTable(ctx, ns.store, TableDir(s.Name))
			var ue *lance.UnsupportedError
			switch {
			case errors.As(err, &ue):
				mu.Lock()
				ns.addBases(out, s.Name, ue.Bases)
				mu.Unlock()
			case err != nil && !errors.Is(err, objstore.ErrNotFound):
				mu.Lock()
				failed = first(failed, fmt.Errorf("read %s for what it reads of %s: %w", TableDir(s.Name), name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != nil {
		// A table that cannot be read may be a clone of this one: fail
		// closed.
		return nil, failed
	}
	return out[name], nil
}
