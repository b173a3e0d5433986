// Package ledger is reaper's audit ledger: one Parquet file per purge pass,
// one row per table the pass looked at, written to a store of its own (a
// local directory or an s3:// prefix, never inside a table directory).
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
// Each file is Parquet, zstd-compressed, with the Arrow schema stored in the
// file, and the key-value metadata reaper.pass_id and reaper.pass_started
// (RFC 3339, ms). Columns, in order, are listed by SchemaDoc (docs/FORMAT.md
// copies it):
//
//	pass_id         utf8                   not null  id of the pass that wrote the row
//	root            utf8                   not null  database root URI, without secrets
//	table           utf8                   not null  table name, without ".lance"
//	action          utf8                   not null  purged, skipped, dry_run, failed, conflict, held, refused
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
}
