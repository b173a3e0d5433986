package worker

import (
	"context"
	"log/slog"
)

// This file owns the summary lines of a pass's log: "pass finished", and
// "root finished" for each root, both counting what the purges and what
// version retention did, so a pass that only removed old versions does not
// read as one that did nothing, and a pass over many roots says which root
// retention cleaned.

// summaryAttrs are a summary line's counts: the purges' (purged, objects,
// bytes, skipped, failed), then version retention's (tables cleaned and
// failed, versions, objects and bytes removed); a dry run's say what would
// be, marked dry_run. extra ends the line.
func summaryAttrs(t Totals, dryRun bool, extra ...any) []any {
	attrs := []any{"purged", t.Purged, "objects", t.Objects, "bytes", t.Bytes,
		"skipped", t.Skipped + t.Held + t.Conflicts + t.Refused, "failed", t.Failed,
		"tables_cleaned", t.Cleaned, "versions_removed", t.VersionsRemoved,
		"retention_objects", t.RetentionObjects, "retention_bytes", t.RetentionBytes, "retention_failed", t.RetentionFailed}
	if dryRun {
		attrs = append(attrs, "dry_run", true)
	}
	return append(attrs, extra...)
}

// logRoot writes the root's "root finished" line: at info when the pass
// did anything there (purged, cleaned, failed, refused), else at debug (a
// root with nothing due and no old version, most roots of most passes).
func (p *pass) logRoot(rr *RootReport, log *slog.Logger) {
	t := p.rep.rootTotals(rr)
	level := slog.LevelDebug
	if t.Purged+t.DryRun+t.Failed+t.Conflicts+t.Cleaned+t.RetentionFailed+t.RootErrors+t.RefusedRoots > 0 {
		level = slog.LevelInfo
	}
	if !log.Enabled(context.Background(), level) {
		return
	}
	var extra []any
	if n := rr.idleTables(); n > 0 {
		extra = append(extra, "retention_nothing_to_do", n)
	}
	if b, ok := rr.RetentionBacklog(); ok {
		extra = append(extra, "reclaimable_versions", b.Versions, "reclaimable_bytes", b.Bytes)
	}
	extra = append(extra, "duration_seconds", rr.Finished.Sub(rr.Started).Seconds())
	log.Log(context.Background(), level, "root finished", summaryAttrs(t, p.rep.DryRun, extra...)...)
}
