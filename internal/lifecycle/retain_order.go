package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
)

// RetainOutcome says what a retention run did with one table.
type RetainOutcome string

const (
	// RetainCleaned: old versions and their files were deleted.
	RetainCleaned RetainOutcome = "cleaned"
	// RetainNothingToDo: nothing was old enough to remove.
	RetainNothingToDo RetainOutcome = "nothing_to_do"
)

// RetainOptions tune one retention run.
type RetainOptions struct {
	// Policy is what to remove (retention.Policy.Validate must accept it).
	Policy retention.Policy
	// Plan, when set, is the plan of Policy the caller made of the table
	// (PlanTableRetention) outside the lease: the run executes it, only
	// narrowed under the lease to what the table still allows. Without
	// it, or when the table's retention record is not the one the plan
	// saw, the run plans under the lease.
	Plan *RetentionPlan
	// Protected is what other tables of the root read of this one through
	// base paths (shallow clones: retain_clones.go), kept whatever the
	// policy; ProtectedRead says the caller read the root's other tables
	// for it (nil then means none). Without it the run reads them itself.
	Protected     *Protected
	ProtectedRead bool
	// MinTTL is the floor (safety.min_ttl) the policy is checked against
	// at the store's clock (retention.Policy.CheckFloor): below it the run
	// stops before its lease, ErrShortTTL, nothing deleted. 0: no floor
	// (the caller checked, or allows short ages).
	MinTTL time.Duration
	// DeleteConcurrency and MaxDeleteConcurrency are as for a purge
	// (adaptive.go).
	DeleteConcurrency    int
	MaxDeleteConcurrency int
	// Progress, when set, is called after each delete batch with the
	// running totals.
	Progress func(objects, bytes int64)
	// BeforeDelete, when set, is called under the lease with what the run
	// is about to delete, after the record is written and before the first
	// delete (the audit journal's intent); its error stops the run there,
	// nothing deleted.
	BeforeDelete func(ctx context.Context, versions int, objects, bytes int64) error
}

// RetainResult reports one retention run.
type RetainResult struct {
	Name    string
	Outcome RetainOutcome
	// Plan is the plan the run executed, before it was narrowed (keys
	// relative to the table directory).
	Plan retention.Plan
	// Finished: the run found the record of an earlier run cut short and
	// took over what of it was still true (Record).
	Finished bool
	Record   *RecordInfo
	// VersionsRemoved, Objects and Bytes are what was deleted (manifests
	// included).
	VersionsRemoved int
	Objects         int64
	Bytes           int64
	// Lease is how taking the table's lease went (LeaseAcquired...).
	Lease string
	// Warnings are what an operator should know of the table that did not
	// stop the run: a tag naming a version whose manifest is gone (made
	// after the run had deleted it).
	Warnings []string
}

// Retain removes the old versions of a live table that opts.Policy removes,
// as Lance's cleanup_old_versions would, beside LanceDB writers that do not
// take reaper's lease. This file owns the retention order
// (docs/RETENTION.md); every step is safe to crash after, and the next run
// takes over what of it is still true:
//
//  1. the table is live: no marker (a soft-deleted table is left to its
//     purge) and a directory of its own; the policy is not below the floor
//     (opts.MinTTL) at the store's clock;
//  2. take the table's lease, so no purge, revive or other retention of
//     the table runs meanwhile; its fenced context carries what follows;
//  3. guard: lease read back, no marker, no purge commit, no hold, no
//     PAUSE;
//  4. the plan: opts.Plan as made, or, without one or when the record
//     beside the table is not the one it saw, a plan made now: the policy
//     on the table as it is, plus the files a record left by a run cut
//     short still proves (retain_record.go); a record never removes a
//     version the policy keeps. The record is written (create-if-absent,
//     or over the old one, compare-and-swap): from here a crash leaves
//     what to finish. A plan with nothing to do only removes an old record;
//  5. the audit intent (opts.BeforeDelete);
//  6. read the versions and refs again, narrow the plan (a version
//     committed, tagged, branched from or renamed since keeps what it
//     references), then delete the removed versions' manifests, oldest
//     first, in batches, the guard before each: a version still listed
//     never misses a file, since files go only after every manifest;
//  7. read them again and narrow again: a removed version still listed,
//     under any key, now stands with every file it references; then the
//     versions' rows in an external commit store (s3+ddb://,
//     retain_rows.go), never the newest version's, then the files in
//     batches, the guard before each; on a local disk the emptied
//     directories below _indices/ go with them, and with DeleteUnverified
//     every other empty one no standing version's index names
//     (pruneIndexDirs), as Lance's cleanup leaves the directories;
//  8. guard, then delete the record.
func (ns *Namespace) Retain(ctx context.Context, name string, opts RetainOptions) (RetainResult, error) {
	res := RetainResult{Name: name}
	if err := ValidateName(name); err != nil {
		return res, err
	}
	if err := opts.Policy.Validate(); err != nil {
		return res, err
	}
	if opts.Plan != nil && opts.Plan.Name != name {
		return res, fmt.Errorf("retain %q: the plan given is table %q's", name, opts.Plan.Name)
	}
	ctx = withTable(ctx, name)
	// 1. A live table, and a policy above the floor.
	if err := ns.checkLive(ctx, name); err != nil {
		return res, err
	}
	if err := ns.checkRetainFloor(ctx, name, opts); err != nil {
		return res, err
	}
	if !opts.ProtectedRead {
		p, err := ns.protectionOf(ctx, name)
		if err != nil {
			return res, fmt.Errorf("retain %q: %w", name, err)
		}
		opts.Protected, opts.ProtectedRead = p, true
	}
	// 2. The lease; steps 3 to 8 under it.
	err := ns.underLease(ctx, "retain", name, &res.Lease, func(lctx context.Context, lease *lock.Lease) error {
		var err error
		res, err = ns.retainUnderLease(lctx, lease, name, res, opts)
		return err
	})
	return res, err
}

// checkRetainFloor refuses a policy below opts.MinTTL at the store's clock
// (the plan's, when one is given).
func (ns *Namespace) checkRetainFloor(ctx context.Context, name string, opts RetainOptions) error {
	if opts.MinTTL <= 0 {
		return nil
	}
	var now time.Time
	if opts.Plan != nil && !opts.Plan.Now.IsZero() {
		now = opts.Plan.Now
	} else {
		var err error
		if now, err = ns.storeNow(ctx); err != nil {
			return fmt.Errorf("retain %q: %w", name, err)
		}
	}
	if err := opts.Policy.CheckFloor(now, opts.MinTTL); err != nil {
		return fmt.Errorf("retain %q: %w: %w; nothing was deleted", name, ErrShortTTL, err)
	}
	return nil
}

// checkLive refuses a table that is soft-deleted, not a directory, or
// without data.
func (ns *Namespace) checkLive(ctx context.Context, name string) error {
	_, err := ns.store.Head(ctx, MarkerKey(name))
	switch {
	case err == nil:
		return fmt.Errorf("retain %q: %w: left to its purge", name, ErrAlreadyDeleted)
	case !errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("retain %q: %w", name, err)
	}
	if err := ns.checkIsTable(ctx, name); err != nil {
		return fmt.Errorf("retain %q: %w", name, err)
	}
	exists, err := ns.hasData(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("retain %q: %w", name, err)
	case !exists:
		return fmt.Errorf("retain %q: %w", name, ErrNotFound)
	}
	return nil
}

// planUnderLease is the plan a run executes: opts.Plan when the record
// beside the table is the one it saw (none, or the same ETag), else a plan
// made now, under the lease, by the same planner. The plan's keys come
// back relative to the table directory.
func (ns *Namespace) planUnderLease(ctx context.Context, name string, opts RetainOptions, recETag string) (RetentionPlan, error) {
	rp := RetentionPlan{}
	if opts.Plan != nil && planSawRecord(opts.Plan, recETag) {
		rp = *opts.Plan
		if rp.table == nil && rp.Result == RetentionPlanned {
			// A plan kept without its table (a pass planned the whole
			// root first): the table as it is now, to narrow it against.
			t, err := lance.ReadTable(ctx, ns.store, TableDir(name))
			if err != nil {
				return rp, fmt.Errorf("retain %q: %w", name, err)
			}
			rp.table = t
		}
	} else {
		now, err := ns.storeNow(ctx)
		if err != nil {
			return rp, fmt.Errorf("retain %q: %w", name, err)
		}
		rp = ns.planTable(ctx, name, opts.Policy, now, recETag != "")
	}
	rp.Protect(opts.Protected)
	if rp.Result == RetentionUnsupported || rp.Result == RetentionFailed {
		err := rp.err
		if err == nil {
			err = errors.New(rp.Reason)
		}
		return rp, fmt.Errorf("retain %q: %w", name, err)
	}
	// Keys relative to the table directory, as the record and the
	// deletes take them.
	files := make([]retention.File, len(rp.Plan.Files))
	for i, f := range rp.Plan.Files {
		f.Key = strings.TrimPrefix(f.Key, TableDir(name))
		files[i] = f
	}
	rp.Plan.Files = files
	return rp, nil
}

// planSawRecord reports whether plan was made with the record whose ETag
// is etag ("" for none) beside the table.
func planSawRecord(plan *RetentionPlan, etag string) bool {
	if plan.Record == nil {
		return etag == ""
	}
	return plan.Record.etag == etag
}

// retainUnderLease runs steps 3 to 8; ctx is the lease's fenced context.
func (ns *Namespace) retainUnderLease(ctx context.Context, lease *lock.Lease, name string, res RetainResult, opts RetainOptions) (RetainResult, error) {
	g := &retainGuard{ns: ns, name: name, lease: lease}
	// 3. Guard.
	if err := g.check(ctx); err != nil {
		return res, err
	}
	// 4. The plan and the record.
	_, robj, err := ns.readRetainRecord(ctx, name)
	if err != nil {
		return res, fmt.Errorf("retain %q: %w", name, err)
	}
	rp, err := ns.planUnderLease(ctx, name, opts, robj.ETag)
	if err != nil {
		return res, err
	}
	res.Plan, res.Record, res.Finished = rp.Plan, rp.Record, rp.Record != nil
	if res.Finished {
		ns.log.InfoContext(ctx, "a retention record of a run cut short: only what of it is still true is finished", "table", name,
			"recorded_versions", rp.Record.Versions, "recorded_files", rp.Record.Files, "files_still_true", rp.Record.StillTrue,
			"recorded_by", rp.Record.Owner)
	}
	if len(rp.Plan.Files) == 0 && len(rp.Plan.Removed) == 0 {
		res.Outcome = RetainNothingToDo
		if err := ns.pruneWhenIdle(ctx, g, name, opts, rp.table); err != nil {
			return res, err
		}
		if robj.ETag == "" {
			return res, nil
		}
		// Nothing of the old record is still true: it goes, after the rows
		// its removed versions may have left (s3+ddb).
		if err := ns.sweepRowsOf(ctx, g, name, opts, &res, rp.table); err != nil {
			return res, err
		}
		if err := g.check(ctx); err != nil {
			return res, fmt.Errorf("retain %q: stopped before removing an old record: %w", name, err)
		}
		if err := ns.store.DeleteIfMatch(ctx, RetainKey(name), robj.ETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return res, fmt.Errorf("retain %q: delete an old retention record: %w", name, err)
		}
		return res, nil
	}
	info := lease.Info()
	recNow := rp.Now
	if now, err := ns.storeNow(ctx); err == nil {
		recNow = now
	}
	r := newRetainRecord(rp.Plan, info.Owner, info.Generation, recNow)
	written, err := ns.writeRetainRecord(ctx, name, r, robj.ETag)
	if err != nil {
		return res, err
	}
	rec := &r
	g.recordETag = written.ETag
	// 5. The audit intent.
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(ctx, len(rec.Versions), int64(len(rec.Files)), recordBytes(rec.Files)); err != nil {
			return res, fmt.Errorf("retain %q: record the intent before the first delete: %w", name, err)
		}
	}
	d := &retainDeleter{ns: ns, g: g, name: name, opts: opts, res: &res}
	// 6. Manifests, oldest first, after reading the versions again.
	t := rp.table
	if t, rec, err = d.narrow(ctx, t, *rec, false); err != nil {
		return res, err
	}
	if err := d.delete(ctx, manifestsOf(*rec), d.manifestsStillPlanned(t, rec)); err != nil {
		return res, err
	}
	// 7. Read again: a version still listed now stands. Then rows, files.
	if t, rec, err = d.narrow(ctx, t, *rec, true); err != nil {
		return res, err
	}
	res.VersionsRemoved = len(rec.Versions)
	if err := d.deleteRows(ctx, t, recordedVersions(rec.Versions), res.Finished); err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, danglingTags(t)...)
	for _, w := range res.Warnings {
		ns.log.WarnContext(ctx, "version retention: "+w, "table", name)
	}
	if err := d.delete(ctx, filesOf(*rec), nil); err != nil {
		return res, err
	}
	if err := ns.pruneIndexDirs(ctx, g, name, opts, t, recordedVersions(rec.Versions), rec.keys()); err != nil {
		return res, err
	}
	// 8. The record last.
	if err := g.check(ctx); err != nil {
		return res, fmt.Errorf("retain %q: stopped before removing its record: %w", name, err)
	}
	if err := ns.store.DeleteIfMatch(ctx, RetainKey(name), g.recordETag); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return res, fmt.Errorf("retain %q: delete retention record: %w", name, err)
	}
	res.Outcome = RetainCleaned
	ns.log.InfoContext(ctx, "retention finished", "table", name, "versions_removed", res.VersionsRemoved,
		"objects", res.Objects, "bytes", res.Bytes, "took_over_a_record", res.Finished)
	return res, nil
}

// recordedVersions are the versions' numbers.
func recordedVersions(vs []recordVersion) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

// manifestsStillPlanned is the manifest phase's check before each batch,
// once the batch has its delete slot: the table's tags and branches are
// read again, and _versions/ listed again; a manifest goes only while its
// version is not tagged on main nor a branch's root (a tag made mid-run
// keeps it, and the recheck before the files then keeps its files) and it
// is listed still as planned (key, size, LastModified: a table dropped and
// created again mid-run writes new manifests at the same keys). What is
// left is the time between these reads and the delete.
func (d *retainDeleter) manifestsStillPlanned(t *lance.Table, rec *retainRecord) func(context.Context, []keyEntry) ([]keyEntry, error) {
	dir := TableDir(d.name)
	planned := make(map[string]retention.Removal, len(rec.Versions))
	for _, r := range rec.removals() {
		planned[r.Key] = r
	}
	return func(ctx context.Context, batch []keyEntry) ([]keyEntry, error) {
		refs, err := t.RefreshRefs(ctx, d.ns.store)
		if err != nil {
			return nil, fmt.Errorf("retain %q: read the tags again: %w", d.name, err)
		}
		listing, err := lance.ListVersions(ctx, d.ns.store, dir)
		if err != nil {
			return nil, fmt.Errorf("retain %q: list the versions again: %w", d.name, err)
		}
		listed := make(map[string]lance.Version, len(listing))
		for _, o := range listing {
			listed[o.Key] = lance.Version{Key: o.Key, Size: o.Size, LastModified: o.LastModified}
		}
		keep := map[uint64]bool{}
		for _, tg := range refs.Tags {
			if tg.Branch == "" {
				keep[tg.Version] = true
			}
		}
		for _, b := range refs.Branches {
			keep[b.RootVersion] = true
		}
		out := batch[:0:0]
		for _, f := range batch {
			rel := strings.TrimPrefix(f.key, dir)
			n, ok := manifestVersion(rel)
			r, isPlanned := planned[rel]
			v, isListed := listed[rel]
			switch {
			case ok && keep[n]:
				d.ns.log.InfoContext(ctx, "a version tagged or branched from since the plan keeps its manifest", "table", d.name, "version", n)
				continue
			case !isPlanned || !isListed || !r.Is(v):
				d.ns.log.InfoContext(ctx, "a manifest is no longer the one planned (gone, or written again): not deleted", "table", d.name, "key", rel)
				continue
			}
			out = append(out, f)
		}
		return out, nil
	}
}

// danglingTags names the tags of main that name a version t no longer
// lists: a tag made on a version after its manifest was deleted (a race
// with this run, or an earlier one). LanceDB cannot check it out; the run
// says so rather than hide it.
func danglingTags(t *lance.Table) []string {
	listed := map[uint64]bool{}
	for _, v := range t.Versions {
		listed[v.Number] = true
	}
	var out []string
	for _, tg := range t.Tags {
		if tg.Branch == "" && !listed[tg.Version] {
			out = append(out, fmt.Sprintf("tag %q names version %d, whose manifest is gone (tagged after it was removed?): delete or move the tag", tg.Name, tg.Version))
		}
	}
	return out
}

// recordBytes sums the sizes of files.
func recordBytes(files []recordFile) int64 {
	var n int64
	for _, f := range files {
		n += f.Bytes
	}
	return n
}

// manifestsOf are the record's manifest files, oldest version first.
func manifestsOf(r retainRecord) []recordFile {
	var out []recordFile
	for _, f := range r.Files {
		if _, ok := manifestVersion(f.Key); ok {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b recordFile) int {
		va, _ := manifestVersion(a.Key)
		vb, _ := manifestVersion(b.Key)
		return cmp.Compare(va, vb)
	})
	return out
}

// filesOf are the record's other files.
func filesOf(r retainRecord) []recordFile {
	var out []recordFile
	for _, f := range r.Files {
		if _, ok := manifestVersion(f.Key); !ok {
			out = append(out, f)
		}
	}
	return out
}

// manifestVersion is the version whose manifest key (relative to the table
// directory) is, for an attached manifest.
func manifestVersion(key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, lance.VersionsDir)
	if !ok {
		return 0, false
	}
	return lance.ManifestVersion(rest)
}

// retainDeleter carries one run's deletes.
type retainDeleter struct {
	ns   *Namespace
	g    *retainGuard
	name string
	opts RetainOptions
	res  *RetainResult
}

// narrow reads the table's versions and refs again and keeps, of the
// record, what the table still allows (retention.Recheck); manifestsDeleted
// says the record's manifests were deleted since.
func (d *retainDeleter) narrow(ctx context.Context, t *lance.Table, rec retainRecord, manifestsDeleted bool) (*lance.Table, *retainRecord, error) {
	t, err := t.Refresh(ctx, d.ns.store)
	if err != nil {
		return nil, nil, fmt.Errorf("retain %q: read the versions again: %w", d.name, err)
	}
	versions, keys := retention.Recheck(t, rec.removals(), rec.keys(), manifestsDeleted)
	if n := len(rec.Files) - len(keys); n > 0 {
		d.ns.log.InfoContext(ctx, "a version written, tagged, branched from or still listed since the plan keeps files of it",
			"table", d.name, "files_kept", n, "versions_kept", len(rec.Versions)-len(versions))
	}
	out := rec.narrow(versions, keys)
	return t, &out, nil
}

// delete deletes files (keys relative to the table directory) in batches,
// the guard before each, and makes the deletes durable before it returns.
// before, when set, is asked just before each batch goes (with its slot,
// after the guard) and returns what of it may still go.
func (d *retainDeleter) delete(ctx context.Context, files []recordFile, before func(context.Context, []keyEntry) ([]keyEntry, error)) error {
	if len(files) == 0 {
		return nil
	}
	durable := objstore.NewSyncBatch()
	defer func() { _ = durable.Flush() }()
	// On a local disk a delete removes the directories it emptied: only
	// those below _indices/, as Lance's cleanup (never _indices/ itself,
	// _deletions/ or another directory a writer may be about to write in).
	ctx = objstore.WithPruneWithin(objstore.WithSyncBatch(ctx, durable), TableDir(d.name)+lance.IndicesDir)
	bd := newBatchDeleter(ctx, d.ns.store, d.g, d.name, PurgeOptions{
		DeleteConcurrency: d.opts.DeleteConcurrency, MaxDeleteConcurrency: d.opts.MaxDeleteConcurrency,
		Progress: func(objects, bytes int64) {
			if d.opts.Progress != nil {
				d.opts.Progress(d.res.Objects+objects, d.res.Bytes+bytes)
			}
		},
	})
	bd.filter = before
	dir := TableDir(d.name)
	var err error
	for start := 0; start < len(files) && err == nil; start += d.ns.opts.DeleteBatch {
		batch := make([]keyEntry, 0, min(d.ns.opts.DeleteBatch, len(files)-start))
		for _, f := range files[start:min(start+d.ns.opts.DeleteBatch, len(files))] {
			batch = append(batch, keyEntry{key: dir + f.Key, size: f.Bytes})
		}
		err = bd.submit(batch)
	}
	if werr := bd.wait(); err == nil {
		err = werr
	}
	objects, bytes := bd.totals()
	d.res.Objects += objects
	d.res.Bytes += bytes
	if ferr := durable.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("retain %q: %w", d.name, ferr)
	}
	return err
}

// retainGuard is what a retention run re-checks against the store before
// its first delete and before each batch: its lease (read back), the table
// still live (no marker, no purge commit), no legal hold, no PAUSE, and its
// record unchanged. It is the purge's guard (guardReads) with these checks:
// one read of the table's control objects beside the PAUSE read.
type retainGuard struct {
	ns         *Namespace
	name       string
	lease      *lock.Lease
	recordETag string
}

func (g *retainGuard) leaseHeld() error { return g.lease.Check() }

// check runs every re-check; the first failure in order of precedence (a
// lost lease, a hold, a pause, a drop or a changed record, a read error)
// is returned.
func (g *retainGuard) check(ctx context.Context) error {
	absent := func(kind entryKind, key string) controlCheck {
		return controlCheck{kind, func(_ objstore.Object, found bool) error {
			if found {
				return &ConflictError{Name: g.name, Reason: fmt.Sprintf("%s appeared during retention: the table was dropped, and is left to its purge (which removes the retention record too)", key)}
			}
			return nil
		}}
	}
	checks := []controlCheck{absent(entryMarker, MarkerKey(g.name)), absent(entryCommit, CommitKey(g.name))}
	if g.recordETag != "" {
		checks = append(checks, controlCheck{entryRetain, func(obj objstore.Object, found bool) error {
			if !found || obj.ETag != g.recordETag {
				return &ConflictError{Name: g.name, Reason: fmt.Sprintf("the retention record %s changed or vanished during the run (edited outside reaper's lease); it stopped before its next delete", RetainKey(g.name))}
			}
			return nil
		}})
	}
	return g.ns.guardReads(ctx, "retain", g.name, g.lease, checks...)
}

// sweepRowsOf sweeps the commit rows a run cut short may have left (an
// s3+ddb:// root; nothing elsewhere) for a run that removes no version: the
// table read now when the plan kept none.
func (ns *Namespace) sweepRowsOf(ctx context.Context, g *retainGuard, name string, opts RetainOptions, res *RetainResult, t *lance.Table) error {
	if objstore.CommitRowsOf(ns.store) == nil {
		return nil
	}
	if t == nil {
		var err error
		if t, err = lance.ReadTable(ctx, ns.store, TableDir(name)); err != nil {
			return fmt.Errorf("retain %q: %w", name, err)
		}
	}
	d := &retainDeleter{ns: ns, g: g, name: name, opts: opts, res: res}
	return d.deleteRows(ctx, t, nil, true)
}

// pruneWhenIdle is pruneIndexDirs for a run with nothing else to do: the
// table read now when the plan kept none.
func (ns *Namespace) pruneWhenIdle(ctx context.Context, g *retainGuard, name string, opts RetainOptions, t *lance.Table) error {
	if !opts.Policy.DeleteUnverified {
		return nil
	}
	if t == nil {
		var err error
		if t, err = lance.ReadTable(ctx, ns.store, TableDir(name)); err != nil {
			return fmt.Errorf("retain %q: %w", name, err)
		}
	}
	return ns.pruneIndexDirs(ctx, g, name, opts, t, nil, nil)
}

// pruneIndexDirs removes, with DeleteUnverified on a store with directories
// (local), every empty directory below the table's _indices/ that no index
// the table still uses names, as Lance's cleanup does with delete_unverified
// (remove_empty_dirs): an abandoned index build's, which no run's deletes
// emptied. Lance also removes one older than 7 days without it; reaper
// keeps those (docs/RETENTION.md). removed are the versions the run
// removed, deleted the keys it deleted (relative to the table directory).
// It never follows a link (a link is listed as an object, and PruneEmpty
// follows none), nor removes a directory that holds an object: one written
// meanwhile stops that directory's removal, not the run.
func (ns *Namespace) pruneIndexDirs(ctx context.Context, g *retainGuard, name string, opts RetainOptions, t *lance.Table, removed []uint64, deleted []string) error {
	if !opts.Policy.DeleteUnverified {
		return nil
	}
	dir := TableDir(name) + lance.IndicesDir
	var prefixes []string
	err := ns.store.List(ctx, dir, func(p objstore.Page) error {
		prefixes = append(prefixes, p.Prefixes...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("retain %q: list %s: %w", name, dir, err)
	}
	if len(prefixes) == 0 {
		return nil
	}
	gone := make(map[string]bool, len(deleted))
	for _, k := range deleted {
		gone[k] = true
	}
	// A directory that still holds an object the read listed is not empty:
	// no walk needed (on an object store every listed prefix is so).
	held := map[string]bool{}
	for _, o := range t.Objects {
		rest, ok := strings.CutPrefix(o.Key, lance.IndicesDir)
		if !ok || gone[o.Key] {
			continue
		}
		uuid, _, _ := strings.Cut(rest, "/")
		held[uuid] = true
	}
	inUse := retention.IndicesInUse(t, removed)
	var empty []string
	for _, prefix := range prefixes {
		uuid := strings.TrimSuffix(strings.TrimPrefix(prefix, dir), "/")
		if inUse[uuid] || held[uuid] {
			continue
		}
		hasObject := false
		err := ns.store.Walk(ctx, prefix, func(objs []objstore.Object) error {
			if len(objs) > 0 {
				hasObject = true
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("retain %q: list %s: %w", name, prefix, err)
		}
		if !hasObject {
			empty = append(empty, prefix)
		}
	}
	if len(empty) == 0 {
		return nil
	}
	if err := g.check(ctx); err != nil {
		return err
	}
	removedDirs := 0
	for _, prefix := range empty {
		err := ns.store.PruneEmpty(ctx, prefix)
		switch {
		case errors.Is(err, objstore.ErrNotEmpty):
			ns.log.InfoContext(ctx, "an empty index directory got an object meanwhile; kept", "table", name, "dir", prefix)
		case err != nil:
			return fmt.Errorf("retain %q: remove the empty directory %s: %w", name, prefix, err)
		default:
			removedDirs++
		}
	}
	ns.log.InfoContext(ctx, "removed empty index directories (delete_unverified)", "table", name, "dirs", removedDirs)
	return nil
}
