package reaper

import (
	"context"
	"time"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// PurgeOptions tune one Purge. The zero value purges with the CLI's
// defaults.
type PurgeOptions struct {
	// DryRun walks the table and checks the identity fence but deletes
	// nothing and takes no lease (Outcome dry_run, with what would go).
	DryRun bool
	// Progress, when set, is called after each delete batch with the
	// running totals (from several goroutines when more than one batch is
	// in flight).
	Progress func(objects, bytes int64)
	// Walked, when set, is called once the table has been walked, with the
	// objects and bytes the purge is about to delete: with Progress, the
	// total of a progress bar.
	Walked func(objects, bytes int64)
	// DeleteConcurrency is how many delete batches are in flight at first,
	// MaxDeleteConcurrency how far that grows while the store does not push
	// back (below DeleteConcurrency: fixed). Zero means the CLI's defaults,
	// limits.delete_concurrency (4) and limits.max_delete_concurrency (16).
	DeleteConcurrency    int
	MaxDeleteConcurrency int
	// Planned is the table as a plan just read it (a TableStatus of
	// ListPurgeable or PlanPurge): its marker stands in for the first
	// marker read, saving a request; the read under the lease still
	// compares against it.
	Planned *TableStatus
	// MaxObjects stops the purge after about this many objects (whole
	// batches), leaving the commit and the marker so the next purge
	// continues (Outcome partial). 0 = no limit.
	MaxObjects int64
	// MinTTL is the TTL floor: a table whose marker's TTL is below it is
	// kept (ErrShortTTL, nothing deleted), as `reaper purge` keeps it
	// (short_ttl). Zero means DefaultMinTTL (1h).
	MinTTL time.Duration
	// AllowShortTTL lifts the floor: purge whatever the TTL, as
	// `reaper purge --allow-short-ttl`.
	AllowShortTTL bool
	// AfterWalk, when set, is called once the table has been walked and
	// its identity checked, with the objects and bytes the purge would
	// delete (on a dry run too), before anything is recorded, committed or
	// deleted; not for a purge that had committed already. Its error keeps
	// the table, nothing deleted: a service's own rule by size goes here.
	AfterWalk func(ctx context.Context, objects, bytes int64) error
	// BeforeCommit, when set, is called once under the lease, before the
	// purge commits (deletes anything), with the objects and bytes it is
	// about to delete: record the intent in an audit trail there. Its error
	// stops the purge with nothing deleted. Not called on a dry run.
	BeforeCommit func(ctx context.Context, objects, bytes int64) error
}

func (o PurgeOptions) internal() lifecycle.PurgeOptions {
	out := lifecycle.PurgeOptions{DryRun: o.DryRun, Progress: o.Progress, Walked: o.Walked,
		DeleteConcurrency: o.DeleteConcurrency, MaxDeleteConcurrency: o.MaxDeleteConcurrency,
		MaxObjects: o.MaxObjects, BeforeCommit: o.BeforeCommit, MinTTL: o.MinTTL, AfterWalk: o.AfterWalk}
	if o.AllowShortTTL {
		out.MinTTL = 0
	}
	if o.Planned != nil {
		p := o.Planned.internal()
		out.Planned = &p
	}
	return out
}

// Outcome says what a purge did (PurgeResult.Outcome).
type Outcome string

// Outcomes.
const (
	// OutcomePurged: the data and then the marker were deleted.
	OutcomePurged Outcome = "purged"
	// OutcomeOrphanMarker: no data was left; only the marker was deleted.
	OutcomeOrphanMarker Outcome = "orphan_marker_removed"
	// OutcomeDryRun: nothing was deleted; Objects and Bytes are what would
	// be.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomePartial: PurgeOptions.MaxObjects ran out; the commit and the
	// marker stay and the next purge continues.
	OutcomePartial Outcome = "partial"
)

// PurgeResult reports one purge.
type PurgeResult struct {
	Name    string
	Outcome Outcome
	// Objects and Bytes deleted (or that would be, on a dry run), not
	// counting the marker.
	Objects int64
	Bytes   int64
	// DeletedAt and PurgeAfter come from the marker.
	DeletedAt  time.Time
	PurgeAfter time.Time
	// Lease is how taking the table's lease went: "" when the purge stopped
	// before trying (not due, dry run), else "acquired", "contended" or
	// "error".
	Lease string
	// Committed: the purge wrote (or found) the table's purge commit, so
	// the table is partially purged until a purge finishes it.
	Committed bool
}

func purgeResultOf(r lifecycle.PurgeResult) PurgeResult {
	return PurgeResult{Name: r.Name, Outcome: Outcome(r.Outcome), Objects: r.Objects, Bytes: r.Bytes,
		DeletedAt: r.DeletedAt, PurgeAfter: r.PurgeAfter, Lease: r.Lease, Committed: r.Committed}
}
