// Package outcome is reaper's one vocabulary for what a pass did: the
// action taken on each table, the reason for it and the result of the pass.
// The same strings are the worker's decisions, the audit ledger's action and
// reason columns, the reaper_* metric label values and the codes in the
// purge JSON, so a value seen in one place can be searched for in the others.
//
// It is a leaf package (it imports nothing of reaper's) so the worker, the
// ledger and the metrics can all use it without importing one another.
// Values are stable: dashboards, alerts and ledgers outlive releases.
package outcome

// Action is what a pass did with one table: the ledger's action column.
type Action string

const (
	// Purged: the table's files and marker were deleted.
	Purged Action = "purged"
	// Skipped: kept for now (not due, locked, a rail or a limit); a later
	// pass looks again.
	Skipped Action = "skipped"
	// DryRun: the table was due and would have been purged.
	DryRun Action = "dry_run"
	// Failed: the table needs an operator, or its purge returned an error.
	Failed Action = "failed"
	// Conflict: another writer (a revive, another reaper) won a race;
	// nothing was deleted.
	Conflict Action = "conflict"
	// Held: a legal hold kept a due table.
	Held Action = "held"
	// Refused: a safety rail refused the whole root (blast radius).
	Refused Action = "refused"
	// Cleaned: version retention removed old versions of a live table and
	// the files only they referenced.
	Cleaned Action = "cleaned"
)

// Actions lists every action, in the order above.
func Actions() []Action {
	return []Action{Purged, Skipped, DryRun, Failed, Conflict, Held, Refused, Cleaned}
}

// Reason says why an action was taken. Reasons are short and stable:
// metric labels, ledger values and purge JSON codes.
type Reason string

// Reasons of purged and dry_run tables.
const (
	ReasonDue          Reason = "due"
	ReasonOrphanMarker Reason = "orphan_marker"
)

// Reasons of skipped (and held) tables: reaper_skipped_total{reason}.
const (
	ReasonNotDue   Reason = "not_due"
	ReasonLocked   Reason = "locked"
	ReasonHeld     Reason = "held"
	ReasonShortTTL Reason = "short_ttl"
	// ReasonTooLarge: the walk found more bytes than
	// safety.max_table_bytes; nothing was deleted.
	ReasonTooLarge Reason = "too_large"
	// ReasonLimit: limits.max_tables_per_pass or max_objects_per_pass spent.
	ReasonLimit Reason = "limit"
	// ReasonPartial: the table's object budget ran out mid-purge.
	ReasonPartial Reason = "partial"
	ReasonPaused  Reason = "paused"
	// ReasonShutdown: the pass was stopped (SIGTERM, SIGINT, a cancelled
	// context) before or while the table was purged.
	ReasonShutdown Reason = "shutdown"
	// ReasonDeadline: limits.max_pass_duration ran out before or while the
	// table was purged.
	ReasonDeadline Reason = "deadline"
	// ReasonInterrupted: the purge's own request gave up on a timeout
	// while the pass went on; the next pass finishes it.
	ReasonInterrupted Reason = "interrupted"
)

// Reasons of failed tables: reaper_purge_failures_total{reason}.
const (
	ReasonInvalidMarker Reason = "invalid_marker"
	ReasonFutureMarker  Reason = "future_marker"
	ReasonLeaseLost     Reason = "lease_lost"
	ReasonIO            Reason = "io"
	ReasonLive          Reason = "live"
	ReasonNotFound      Reason = "not_found"
	ReasonNotATable     Reason = "not_a_table"
	// ReasonStuck: a purge that had committed (deleted part of the table)
	// could not finish; the detail says what a person must do.
	ReasonStuck Reason = "stuck"
	// ReasonInvalidKey: the table holds an object whose name reaper cannot
	// delete safely; refused before the commit, nothing deleted.
	ReasonInvalidKey Reason = "invalid_key"
	// ReasonRootChanged: a local root's path came to name another
	// directory than the one the pass opened (a symlink flip, a directory
	// swapped with mv), or none; nothing was done through the new path.
	ReasonRootChanged Reason = "root_changed"
	// ReasonLedger: the audit ledger's journal could not record the
	// purge's intent (or failed earlier in the pass), so the purge stopped
	// before its commit: no destruction without an audit record.
	ReasonLedger Reason = "ledger"
)

// Reasons of version retention on a live table (docs/RETENTION.md): its
// rows are cleaned or dry_run with ReasonOldVersions, skipped with
// ReasonNothingToDo or ReasonUnsupported, or held, skipped (paused, locked)
// and failed with the reasons a purge has.
const (
	ReasonOldVersions Reason = "old_versions"
	ReasonNothingToDo Reason = "nothing_to_do"
	// ReasonUnsupported: reaper does not fully understand the table's Lance
	// format (an unknown feature flag, a manifest it cannot parse) and
	// deletes nothing of it.
	ReasonUnsupported Reason = "unsupported"
	// ReasonSoftDeleted: a table named to version retention is
	// soft-deleted: it is left to its purge.
	ReasonSoftDeleted Reason = "soft_deleted"
)

// RetentionReasons lists the reasons only version retention gives.
func RetentionReasons() []Reason {
	return []Reason{ReasonOldVersions, ReasonNothingToDo, ReasonUnsupported, ReasonSoftDeleted}
}

// ReasonUnfinished is found only in the audit ledger: a pass recorded its
// intent to purge a table and no outcome, because it was killed (or lost
// its journal's lease) first; the row was folded from its journal by a
// later pass (recovered_by), or `reaper audit` read it there (pending).
const ReasonUnfinished Reason = "unfinished"

// Reasons of a conflict and of refused roots
// (reaper_roots_refused_total{reason}: blast_radius, paused, error).
const (
	ReasonConflict    Reason = "conflict"
	ReasonBlastRadius Reason = "blast_radius"
	// ReasonRootError: the root could not be opened or planned.
	ReasonRootError Reason = "error"
)

// SkipReasons lists the reasons of skipped and held tables.
func SkipReasons() []Reason {
	return []Reason{ReasonNotDue, ReasonLocked, ReasonHeld, ReasonShortTTL, ReasonTooLarge, ReasonLimit, ReasonPartial,
		ReasonPaused, ReasonShutdown, ReasonDeadline, ReasonInterrupted}
}

// FailureReasons lists the reasons of failed tables.
func FailureReasons() []Reason {
	return []Reason{ReasonIO, ReasonInvalidMarker, ReasonFutureMarker, ReasonLeaseLost, ReasonLive,
		ReasonNotFound, ReasonNotATable, ReasonStuck, ReasonInvalidKey, ReasonRootChanged, ReasonLedger}
}

// LedgerReasons lists the reasons only the audit ledger holds: no pass
// decides them, so no metric counts them.
func LedgerReasons() []Reason {
	return []Reason{ReasonUnfinished}
}

// RefusalReasons lists why a whole root purged nothing.
func RefusalReasons() []Reason {
	return []Reason{ReasonBlastRadius, ReasonPaused, ReasonRootError}
}

// Result is a whole pass's verdict: reaper_passes_total{result}.
type Result string

const (
	ResultSuccess Result = "success"
	// ResultPartial: some table or root failed, or the audit ledger lost
	// or could not write a record (a purge that cannot be audited fails).
	ResultPartial Result = "partial"
	// ResultFailed: every root failed, or no root could be had.
	ResultFailed Result = "failed"
	// ResultInterrupted: shutdown stopped the pass early.
	ResultInterrupted Result = "interrupted"
	// ResultRefused: nothing failed, but a safety rail refused a root
	// (blast_radius, paused), so its due tables were kept. Not a success:
	// a CronJob must not look healthy while it purges nothing.
	ResultRefused Result = "refused"
)

// Results lists every pass result.
func Results() []Result {
	return []Result{ResultSuccess, ResultPartial, ResultFailed, ResultInterrupted, ResultRefused}
}

// Lease is how a purge's attempt at its table's lease went:
// reaper_lock_acquisitions_total{result}.
type Lease string

const (
	LeaseAcquired  Lease = "acquired"
	LeaseContended Lease = "contended"
	LeaseError     Lease = "error"
)

// Leases lists every lease attempt result.
func Leases() []Lease {
	return []Lease{LeaseAcquired, LeaseContended, LeaseError}
}
