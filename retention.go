package reaper

import (
	"cmp"
	"context"
	"time"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/retention"
)

// RetentionPolicy says which old versions of a live table to remove, as
// Lance's own cleanup_old_versions does (docs/RETENTION.md). Exactly one of
// OlderThan and Before is set.
type RetentionPolicy struct {
	// OlderThan removes versions written more than this long before now by
	// the store's clock.
	OlderThan time.Duration
	// Before removes versions written before this instant.
	Before time.Time
	// KeepVersions always keeps the newest N versions (0: 1).
	KeepVersions int
	// DeleteUnverified deletes files no manifest references whatever their
	// age: only safe when nothing writes to the table.
	DeleteUnverified bool
	// UnverifiedAfter is the age from which a file no manifest references
	// is deleted without DeleteUnverified (0: 7 days, as Lance).
	UnverifiedAfter time.Duration
}

func (p RetentionPolicy) internal() retention.Policy {
	return retention.Policy{OlderThan: p.OlderThan, Before: p.Before, KeepVersions: p.KeepVersions,
		DeleteUnverified: p.DeleteUnverified, UnverifiedAfter: p.UnverifiedAfter}
}

// Results of planning retention on one table (RetentionPlan.Result).
const (
	RetentionPlanned     = string(lifecycle.RetentionPlanned)
	RetentionNothingToDo = string(lifecycle.RetentionNothingToDo)
	RetentionUnsupported = string(lifecycle.RetentionUnsupported)
	RetentionFailed      = string(lifecycle.RetentionFailed)
)

// RetentionPlan is what a policy would remove from one live table.
type RetentionPlan struct {
	Name string
	// Result is planned, nothing_to_do, unsupported (reaper does not fully
	// understand the table and never plans anything of it) or failed.
	Result string
	// Reason explains unsupported and failed.
	Reason string
	// Versions is how many versions of main the table had.
	Versions int
	// Cutoff is the instant versions written before it are removed.
	Cutoff time.Time
	// Kept are the versions kept, each with why; Removed the versions
	// whose manifests go.
	Kept    []KeptVersion
	Removed []uint64
	// Files are every file to delete, keys relative to the root
	// (<name>.lance/...), and Bytes their total size.
	Files []RetentionFile
	Bytes int64
	// TableBytes is the table's size as planned: every object under the
	// directories Lance's cleanup manages, what Bytes are a share of.
	TableBytes int64
	// KeptForOthers counts the files kept because other tables of the
	// root (KeptFor, by name) read them through base paths: shallow
	// clones.
	KeptForOthers int
	KeptFor       string
}

// KeptVersion is a version a plan keeps and why.
type KeptVersion struct {
	Version uint64
	Why     string
}

// RetentionFile is one file a plan deletes.
type RetentionFile struct {
	Key   string
	Bytes int64
	Why   string
	// Verified: a removed version referenced it; otherwise no manifest
	// does, and it goes for its age or because of DeleteUnverified.
	Verified bool
}

// PlanRetention plans policy on the named live tables, or on every live
// table of the root, and deletes nothing: one listing of the root, then
// every manifest of each table read once, judged by the store's clock.
// Soft-deleted tables are left to their purge (a named one is reported
// failed). The error is for the root as a whole or a policy that cannot be
// planned; per-table problems are in the results.
func (n *Namespace) PlanRetention(ctx context.Context, policy RetentionPolicy, names ...string) ([]RetentionPlan, error) {
	return n.PlanRetentionEach(ctx, policy, nil, names...)
}

// PlanRetentionEach is PlanRetention that also hands each table's plan to
// each, if set, one call at a time, once every table is planned: a plan
// keeps the files a shallow clone of the root reads of its table, known
// only once every table was read (docs/RETENTION.md, shallow clones). Of
// named tables only the named ones are read: name the clones too, or plan
// the whole root.
func (n *Namespace) PlanRetentionEach(ctx context.Context, policy RetentionPolicy, each func(RetentionPlan), names ...string) ([]RetentionPlan, error) {
	var inner func(lifecycle.RetentionPlan)
	if each != nil {
		inner = func(p lifecycle.RetentionPlan) { each(exportPlan(p)) }
	}
	plans, err := n.ns.PlanRetentionEach(ctx, policy.internal(), inner, names...)
	if err != nil {
		return nil, exported(err)
	}
	out := make([]RetentionPlan, len(plans))
	for i, p := range plans {
		out[i] = exportPlan(p)
	}
	return out, nil
}

// exportPlan is the public form of one table's plan.
func exportPlan(p lifecycle.RetentionPlan) RetentionPlan {
	out := RetentionPlan{Name: p.Name, Result: string(p.Result), Reason: p.Reason, Versions: p.Versions,
		Cutoff: p.Plan.Cutoff, Removed: p.Plan.Removed, Bytes: p.Plan.Bytes, TableBytes: p.TableBytes,
		KeptForOthers: p.KeptForOthers, KeptFor: p.KeptFor}
	for _, k := range p.Plan.Kept {
		out.Kept = append(out.Kept, KeptVersion{Version: k.Version, Why: k.Why})
	}
	for _, f := range p.Plan.Files {
		out.Files = append(out.Files, RetentionFile{Key: f.Key, Bytes: f.Bytes, Why: f.Why, Verified: f.Verified})
	}
	return out
}

// ErrUnsupportedTable: reaper does not fully understand the table's Lance
// format (an unknown feature flag, a manifest it cannot parse, managed
// blobs): it never deletes anything of it.
var ErrUnsupportedTable = lance.ErrUnsupported

// RetainOptions tune one retention run.
type RetainOptions struct {
	Policy RetentionPolicy
	// Progress, when set, is called after each delete batch with the
	// running totals of objects and bytes deleted.
	Progress func(objects, bytes int64)
	// Planned, when set, is called once the run knows what it is about to
	// delete, before the first delete: with Progress, the total of a
	// progress bar. A run with nothing to do never calls it.
	Planned func(objects, bytes int64)
	// MinTTL is the floor the policy is checked against at the store's
	// clock: a cutoff newer than MinTTL ago, or an UnverifiedAfter below it,
	// is refused (ErrShortTTL, nothing deleted), as `reaper retain` refuses
	// it. Zero means DefaultMinTTL (1h): OlderThan: 7 (nanoseconds, a "7
	// days" slip) must not clean a table to its newest version.
	MinTTL time.Duration
	// AllowShortTTL lifts the floor, as `reaper retain --allow-short-ttl`.
	AllowShortTTL bool
}

// Results of a retention run (RetainResult.Outcome).
const (
	RetainCleaned     = string(lifecycle.RetainCleaned)
	RetainNothingToDo = string(lifecycle.RetainNothingToDo)
)

// RetainResult reports one retention run.
type RetainResult struct {
	Name string
	// Outcome is cleaned or nothing_to_do.
	Outcome string
	// Finished: the run finished the plan of an earlier, interrupted run
	// (its record was left beside the table).
	Finished bool
	// VersionsRemoved, Objects and Bytes are what was deleted, manifests
	// included.
	VersionsRemoved int
	Objects         int64
	Bytes           int64
	// Warnings are what an operator should know that did not stop the
	// run, e.g. a tag naming a version whose manifest is gone.
	Warnings []string
}

// Retain removes the old versions of one live table that the policy
// removes, and every file only they reference, as Lance's own cleanup would
// (docs/RETENTION.md), under the table's lease and beside LanceDB writers
// that do not take it: the plan is recorded before the first delete, the
// versions and tags are read again before the manifests and again before
// the files go, and a hold or PAUSE stops it before its next batch. A run
// cut short leaves its record; the next run takes over only what of it is
// still true (never a version its own policy keeps). A policy below the
// floor (opts.MinTTL) is refused. Errors: ErrHeld, ErrPaused, ErrLocked,
// ErrShortTTL, ErrAlreadyDeleted (a soft-deleted table is left to its
// purge), ErrNotFound, ErrUnsupportedTable. Configuration switches (dry_run,
// paused) are a pass's: a service that wants them runs PurgeRoots.
func (n *Namespace) Retain(ctx context.Context, name string, opts RetainOptions) (RetainResult, error) {
	// Deletes go with the adaptive concurrency a purge has by default
	// (limits.delete_concurrency, growing toward max_delete_concurrency),
	// not one batch at a time.
	d := config.Default().Limits
	lo := lifecycle.RetainOptions{Policy: opts.Policy.internal(), Progress: opts.Progress,
		DeleteConcurrency: d.DeleteConcurrency, MaxDeleteConcurrency: d.MaxDeleteConcurrency,
		MinTTL: cmp.Or(opts.MinTTL, lifecycle.DefaultMinTTL)}
	if opts.AllowShortTTL {
		lo.MinTTL = 0
	}
	if planned := opts.Planned; planned != nil {
		lo.BeforeDelete = func(_ context.Context, _ int, objects, bytes int64) error {
			planned(objects, bytes)
			return nil
		}
	}
	name, err := n.resolve(ctx, name)
	if err != nil {
		return RetainResult{Name: name}, err
	}
	res, err := n.ns.Retain(ctx, name, lo)
	return RetainResult{Name: res.Name, Outcome: string(res.Outcome), Finished: res.Finished,
		VersionsRemoved: res.VersionsRemoved, Objects: res.Objects, Bytes: res.Bytes, Warnings: res.Warnings}, exported(err)
}

// RetentionSummary is what a policy would remove from one live table: a
// plan's counts without its lists (EachStatusRetention).
type RetentionSummary struct {
	// Result is planned, nothing_to_do, unsupported or failed; Reason
	// explains the last two.
	Result string
	Reason string
	// Versions is how many versions of main the table has, Removed how many
	// the plan removes.
	Versions int
	Removed  int
	// Files and Bytes are the files the plan deletes and their total size.
	Files int
	Bytes int64
	// TableBytes is the table's size: every object under the directories
	// Lance's cleanup manages (_versions/, _transactions/, data/,
	// _indices/, _deletions/), what Bytes are a share of.
	TableBytes int64
}

// EachStatusRetention is EachStatus with, for each live table, the summary
// of what policy would remove from it (nil for every other name), judged by
// the store's clock at the time the status was. It reads every manifest of
// every live table, some requests per version where a status costs a
// listing of the root; a few tables are read at once while the rows go
// out, and a plan is dropped once summarized, so memory stays bounded
// however large the root.
func (n *Namespace) EachStatusRetention(ctx context.Context, policy RetentionPolicy, fn func(s TableStatus, sum *RetentionSummary, now time.Time) error, names ...string) error {
	return exported(n.ns.EachStatusRetention(ctx, names, policy.internal(), func(s lifecycle.TableStatus, sum *lifecycle.RetentionSummary, now time.Time) error {
		var out *RetentionSummary
		if sum != nil {
			out = &RetentionSummary{Result: string(sum.Result), Reason: sum.Reason, Versions: sum.Versions,
				Removed: sum.Removed, Files: sum.Files, Bytes: sum.Bytes, TableBytes: sum.TableBytes}
		}
		return fn(statusOf(s), out, now)
	}))
}
