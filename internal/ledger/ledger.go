// Package ledger is reaper's audit ledger: one Parquet file per purge pass,
// one row per table the pass looked at, written to a store of its own (a
// local directory or a bucket prefix, in any root form, never inside a
// table directory), and a journal that makes each destruction durable
// before it happens.
//
// Layout: every pass writes one object at
//
//	passes/YYYY/MM/DD/<YYYYMMDDTHHMMSS.mmmZ>-<pass id>.parquet
//
// where the date and timestamp are the pass's end in UTC (the latest Finished
// of its rows, or the pass start for a pass without rows). Keys sort by time
// and contain no ":". A pass with no rows still writes a file with no rows:
// that a pass ran and found nothing is a fact worth recording. Files are never
// rewritten; the ledger only grows (expire it with a bucket lifecycle rule).
//
// A pass's file is written when the pass ends; a pass killed before that
// (SIGKILL, an OOM kill, a deadline) would leave no trace of the tables it
// destroyed. So before a purge commits, the pass records its intent in its
// journal, journal/<pass id>/, and replaces it with the table's row once the
// table is decided (journal.go); its file written, it removes its journal.
// A later pass folds the journal of a pass that died into a file of its own,
// passes/YYYY/MM/DD/<time>-<dead pass id>.recovered-<pass id>.parquet
// (recover.go). docs/FORMAT.md argues the design.
//
// Each file is Parquet, zstd-compressed, with the Arrow schema stored in the
// file, and the key-value metadata reaper.pass_id and reaper.pass_started
// (RFC 3339, ms), plus reaper.recovered_by on a recovered file. Columns, in
// order, are listed by SchemaDoc (docs/FORMAT.md copies it):
//
//	pass_id         utf8                   not null  id of the pass that wrote the row
//	root            utf8                   not null  database root URI, without secrets
//	table           utf8                   not null  table name, without ".lance"
//	action          utf8                   not null  purged, skipped, dry_run, failed, conflict, held, refused, cleaned
//	reason          utf8                   null      why the action was taken; null when there is nothing to explain
//	deleted_at      timestamp[ms, tz=UTC]  null      the marker's deleted_at; null without a readable marker
//	ttl_ms          int64                  null      the TTL applied, in milliseconds; null when unknown
//	purge_after     timestamp[ms, tz=UTC]  null      deleted_at + TTL; null when either is unknown
//	objects         int64                  not null  objects deleted (dry_run: that would be deleted)
//	bytes           int64                  not null  bytes deleted (dry_run: that would be deleted)
//	started         timestamp[ms, tz=UTC]  not null  when work on the table started
//	finished        timestamp[ms, tz=UTC]  not null  when work on the table finished
//	error           utf8                   null      the error of a failed or conflict row; null otherwise
//	reaper_version  utf8                   not null  version of the reaper that wrote the row
//	host            utf8                   not null  host name of the reaper that wrote the row
//	recovered_by    utf8                   null      id of the pass that folded the row from the journal of a pass killed before it wrote its file; null otherwise
//	location        utf8                   null      a table in a LanceDB namespace: its directory under the root (<8 hex>_<object id>/; table is its object id); null for a root table
package ledger

import "time"

// Row is one table in one pass. Zero times are written as null where the
// column is nullable; times are stored with millisecond precision and read
// back in UTC.
type Row struct {
	PassID string
	Root   string
	Table  string
	// Action is an outcome.Action; the ledger stores it as it is.
	Action string
	// Reason is the outcome.Reason, then ": " and the detail for people;
	// empty (null) when there is nothing to explain.
	Reason string
	// DeletedAt and PurgeAfter are zero (null) when unknown.
	DeletedAt  time.Time
	PurgeAfter time.Time
	// TTL is nil (null) when unknown.
	TTL      *time.Duration
	Objects  int64
	Bytes    int64
	Started  time.Time
	Finished time.Time
	// Error is empty (null) when the row carries no error.
	Error   string
	Version string
	Host    string
	// RecoveredBy is the id of the pass that folded this row from the
	// journal of pass PassID, killed before it wrote its own file; empty
	// (null) on a row its own pass wrote.
	RecoveredBy string
	// Location is the directory of a table in a LanceDB namespace (Table
	// is then its object id, which two directories may share); empty
	// (null) for a root table.
	Location string
	// Pending marks a row Read found in a journal, not in a file yet: a
	// pass still running, or one killed whose journal no pass has folded
	// yet. It is never stored.
	Pending bool
}
