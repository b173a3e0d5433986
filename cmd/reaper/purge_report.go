package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/worker"
)

// This file owns the purge report: what `reaper purge` prints of a pass,
// as JSON or as a table. Both are written entry by entry (columns.go): a
// pass over a root of a million tables reports a million of them.

// purgeReport is the result of one purge pass, also its JSON form. The
// three lists are never nil, so JSON always shows arrays.
type purgeReport struct {
	Purged  []purgedJSON  `json:"purged"`
	Skipped []skippedJSON `json:"skipped"`
	Failed  []failedJSON  `json:"failed"`
	DryRun  bool          `json:"dry_run,omitempty"`
	// LedgerErrors are the audit ledger's failed writes: each fails the
	// pass (exit 1). Absent when there are none.
	LedgerErrors []string `json:"ledger_errors,omitempty"`
	// Retained are the live tables version retention visited (roots with
	// retention: enabled), by root and name; absent when it visited none.
	// A failed one is in Failed too.
	Retained []retainedJSON `json:"retained,omitempty"`
	// misconfigured holds the root failures an operator fixes in the
	// configuration (exit 2), each "<root>: <problem>; <fix>".
	misconfigured []error
	// routine are the roots' routine decisions (worker.RootReport.Routine:
	// not due, paused, refused by the blast radius, limits), all skipped,
	// by root: listed among Skipped (skipped) from the pass's compact
	// records, never as entries of their own (a root may have millions).
	routine []routineRoot
}

// routineRoot is one root's routine decisions; root is its name in the
// report ("" when the report names no root).
type routineRoot struct {
	root string
	rr   *worker.RootReport
}

type purgedJSON struct {
	Root    string `json:"root,omitempty"`
	Name    string `json:"name"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
	// after is the table's purge_after while the report is put in order.
	after time.Time
}

// skippedJSON is a table kept by the pass: Action and Code are the outcome
// vocabulary (as in the ledger and the metrics), Reason the sentence.
type skippedJSON struct {
	Root   string         `json:"root,omitempty"`
	Name   string         `json:"name"`
	Action outcome.Action `json:"action"`
	Code   outcome.Reason `json:"code"`
	Reason string         `json:"reason"`
}

// retainedJSON is one live table's version retention: Result is its
// action (cleaned, dry_run, skipped, held, conflict, failed), Code the
// outcome reason (old_versions, nothing_to_do, unsupported, ...).
type retainedJSON struct {
	Root     string         `json:"root,omitempty"`
	Name     string         `json:"name"`
	Location string         `json:"location,omitempty"`
	Result   outcome.Action `json:"result"`
	Code     outcome.Reason `json:"code"`
	Versions int            `json:"versions_removed"`
	Objects  int64          `json:"objects"`
	Bytes    int64          `json:"bytes"`
	Detail   string         `json:"detail"`
}

// failedJSON is a failed table (or root, without a name): Code is its
// outcome reason, Error the sentence.
type failedJSON struct {
	Root  string         `json:"root,omitempty"`
	Name  string         `json:"name"`
	Code  outcome.Reason `json:"code"`
	Error string         `json:"error"`
}

func newPurgeReport(dryRun bool) *purgeReport {
	return &purgeReport{Purged: []purgedJSON{}, Skipped: []skippedJSON{}, Failed: []failedJSON{}, DryRun: dryRun}
}

func (r *purgeReport) totals() (objects, bytes int64) {
	for _, p := range r.Purged {
		objects += p.Objects
		bytes += p.Bytes
	}
	return objects, bytes
}

// skippedLen is how many tables were skipped, routine ones included.
func (r *purgeReport) skippedLen() int {
	n := len(r.Skipped)
	for _, nd := range r.routine {
		n += nd.rr.RoutineLen()
	}
	return n
}

// skipped yields every skipped table by root and name: Skipped merged
// with the routine decisions.
func (r *purgeReport) skipped() iter.Seq[skippedJSON] {
	return func(yield func(skippedJSON) bool) {
		rest := r.Skipped
		for _, nd := range r.routine {
			for d := range nd.rr.Routine() {
				s := skippedJSON{Root: nd.root, Name: d.Table, Action: d.Action, Code: d.Reason, Reason: skipReason(d)}
				for len(rest) > 0 && compareSkipped(rest[0], s) < 0 {
					if !yield(rest[0]) {
						return
					}
					rest = rest[1:]
				}
				if !yield(s) {
					return
				}
			}
		}
		for _, s := range rest {
			if !yield(s) {
				return
			}
		}
	}
}

// compareSkipped orders skipped tables by root, then name.
func compareSkipped(a, b skippedJSON) int {
	return cmp.Or(strings.Compare(a.Root, b.Root), strings.Compare(a.Name, b.Name))
}

// failedTables are the failed entries that name a table.
func (r *purgeReport) failedTables() []failedJSON {
	var out []failedJSON
	for _, f := range r.Failed {
		if f.Name != "" {
			out = append(out, f)
		}
	}
	return out
}

// failedRoots are the roots that could not be opened or listed.
func (r *purgeReport) failedRoots() []failedJSON {
	var out []failedJSON
	for _, f := range r.Failed {
		if f.Name == "" {
			out = append(out, f)
		}
	}
	return out
}

// summary is the last line of the table output.
func (r *purgeReport) summary() string {
	objects, bytes := r.totals()
	tables, roots := r.failedTables(), r.failedRoots()
	s := fmt.Sprintf("reclaimed %d objects, %s from %d tables; %d skipped, %d failed",
		objects, humanBytes(bytes), len(r.Purged), r.skippedLen(), len(tables))
	if len(roots) > 0 {
		s += fmt.Sprintf("; %d root(s) could not be read", len(roots))
	}
	if len(r.Retained) > 0 {
		var versions, tables int
		var objects, bytes int64
		for _, t := range r.Retained {
			if t.Result == outcome.Cleaned || t.Result == outcome.DryRun {
				versions, objects, bytes, tables = versions+t.Versions, objects+t.Objects, bytes+t.Bytes, tables+1
			}
		}
		verb := "removed"
		if r.DryRun {
			verb = "would remove"
		}
		s += fmt.Sprintf("; version retention: %s %d versions, %d objects, %s from %d of %d live tables",
			verb, versions, objects, humanBytes(bytes), tables, len(r.Retained))
	}
	if r.DryRun {
		s = "dry run, nothing was deleted: would have " + s
	}
	return s
}

// writePurgeJSON writes the report as writeJSON would, entry by entry.
func writePurgeJSON(w io.Writer, r *purgeReport) error {
	bw := flushTo(w)
	bw.WriteString("{\n  \"purged\": ")
	if err := writeJSONArray(bw, "  ", slices.Values(r.Purged)); err != nil {
		return err
	}
	bw.WriteString(",\n  \"skipped\": ")
	if err := writeJSONArray(bw, "  ", r.skipped()); err != nil {
		return err
	}
	bw.WriteString(",\n  \"failed\": ")
	if err := writeJSONArray(bw, "  ", slices.Values(r.Failed)); err != nil {
		return err
	}
	if r.DryRun {
		bw.WriteString(",\n  \"dry_run\": true")
	}
	if len(r.Retained) > 0 {
		bw.WriteString(",\n  \"retained\": ")
		if err := writeJSONArray(bw, "  ", slices.Values(r.Retained)); err != nil {
			return err
		}
	}
	if len(r.LedgerErrors) > 0 {
		bw.WriteString(",\n  \"ledger_errors\": ")
		if err := writeJSONArray(bw, "  ", slices.Values(r.LedgerErrors)); err != nil {
			return err
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// renderPurgeTable prints one section per outcome and the summary line,
// each section's columns aligned over all its rows.
func renderPurgeTable(w io.Writer, r *purgeReport) error {
	bw := flushTo(w)
	purged := "PURGED"
	if r.DryRun {
		purged = "WOULD PURGE (dry run)"
	}
	if len(r.Purged) > 0 {
		writeSection(bw, fmt.Sprintf("%s: %d", purged, len(r.Purged)), []string{"  NAME", "OBJECTS", "BYTES"}, func(yield func([]string) bool) {
			for _, p := range r.Purged {
				if !yield([]string{"  " + displayName(p.Name), strconv.FormatInt(p.Objects, 10), humanBytes(p.Bytes)}) {
					return
				}
			}
		})
	}
	if n := r.skippedLen(); n > 0 {
		writeSection(bw, fmt.Sprintf("SKIPPED: %d (kept for now; a later pass retries)", n), []string{"  NAME", "REASON"}, func(yield func([]string) bool) {
			for s := range r.skipped() {
				if !yield([]string{"  " + displayName(s.Name), safeText(s.Reason)}) {
					return
				}
			}
		})
	}
	if tables := r.failedTables(); len(tables) > 0 {
		writeSection(bw, fmt.Sprintf("FAILED: %d (needs an operator)", len(tables)), []string{"  NAME", "ERROR"}, func(yield func([]string) bool) {
			for _, f := range tables {
				if !yield([]string{"  " + displayName(f.Name), safeText(f.Error)}) {
					return
				}
			}
		})
	}
	writeRetained(bw, r)
	if roots := r.failedRoots(); len(roots) > 0 {
		writeSection(bw, fmt.Sprintf("ROOTS FAILED: %d (not read; nothing in them was purged)", len(roots)), []string{"  ROOT", "ERROR"}, func(yield func([]string) bool) {
			for _, f := range roots {
				if !yield([]string{"  " + safeText(f.Root), safeText(f.Error)}) {
					return
				}
			}
		})
	}
	if len(r.LedgerErrors) > 0 {
		fmt.Fprintf(bw, "AUDIT LEDGER: %d write(s) failed (the audit trail of this pass may be incomplete)\n", len(r.LedgerErrors))
		for _, e := range r.LedgerErrors {
			fmt.Fprintf(bw, "  %s\n", safeText(e))
		}
		bw.WriteString("\n")
	}
	bw.WriteString(r.summary() + "\n")
	return bw.Flush()
}

// writeRetained lists the live tables whose version retention did
// something or was kept from it; those with nothing to do (most, on most
// passes) are counted in the summary only.
func writeRetained(bw *bufio.Writer, r *purgeReport) {
	var rows [][]string
	for _, t := range r.Retained {
		if t.Code == outcome.ReasonNothingToDo || t.Result == outcome.Failed {
			continue // failures are listed under FAILED
		}
		rows = append(rows, []string{"  " + displayName(t.Name), string(t.Code), strconv.Itoa(t.Versions),
			strconv.FormatInt(t.Objects, 10), humanBytes(t.Bytes)})
	}
	if len(rows) == 0 {
		return
	}
	title := "VERSION RETENTION: %d tables"
	if r.DryRun {
		title = "VERSION RETENTION (dry run, would remove): %d tables"
	}
	writeSection(bw, fmt.Sprintf(title, len(rows)), []string{"  NAME", "RESULT", "VERSIONS", "OBJECTS", "BYTES"}, slices.Values(rows))
}

// writeSection writes a titled section: its header and rows aligned as one
// table, then a blank line.
func writeSection(bw *bufio.Writer, title string, header []string, rows iter.Seq[[]string]) {
	bw.WriteString(title + "\n")
	writeTable(bw, func(yield func([]string) bool) {
		if !yield(header) {
			return
		}
		for r := range rows {
			if !yield(r) {
				return
			}
		}
	})
	bw.WriteString("\n")
}
