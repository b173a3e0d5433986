package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/worker"
)

// This file owns the report of `reaper retain`: the plans of a dry run or
// the results of each table's run, over one root or the roots of a
// configuration, as a table or JSON, and the exit status they make.

// retainReport gathers what retain did on each root: the plans of a dry
// run, or the results of each table's run, and the roots that failed.
type retainReport struct {
	dryRun bool
	// progress, when set, shows each cleaned table's progress (--progress).
	progress *retainProgress
	// withRoot: the rows carry their root (a run over a configuration).
	withRoot bool
	plans    []retainJSON
	runs     []retainRunJSON
	// failedRoots could not be opened, read or listed; discovery says a
	// discover pattern could not be expanded.
	failedRoots []failedRootJSON
	discovery   []string
	// misconfigured counts the failed roots the configuration must fix
	// (credentials, a missing bucket: objstore.ErrMisconfigured).
	misconfigured int
	// ledgerErrors are the audit ledger's failed writes; interrupted: the
	// pass was stopped; shortTTL the first table a floor refused.
	ledgerErrors []string
	interrupted  bool
	shortTTL     string

	mu sync.Mutex
	// planned are a dry run's plans by root and name, until fromPass.
	planned map[string]retainJSON
}

// failRoot records a root that could not be worked on.
func (r *retainReport) failRoot(root string, err error) {
	msg := err.Error()
	if se := storeError(root, err); se != err {
		r.misconfigured++
		msg = strings.TrimPrefix(se.Error(), root+": ")
	}
	r.failedRoots = append(r.failedRoots, failedRootJSON{Root: root, Error: msg})
}

// failedRootJSON is a root retain could not work on.
type failedRootJSON struct {
	Root  string `json:"root"`
	Error string `json:"error"`
}

// plan keeps one table's plan as the pass made it (from the retaining
// goroutines): a dry run lists it; --progress shows it at once.
func (r *retainReport) plan(root string, pl lifecycle.RetentionPlan) {
	if !r.dryRun {
		return
	}
	row := retainJSONOfPlan(root, pl)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.planned == nil {
		r.planned = map[string]retainJSON{}
	}
	r.planned[root+"\x00"+pl.Name] = row
	if r.progress != nil {
		r.progress.planned(root, row)
	}
}

// fromPass turns the pass's report into the rows: each live table's
// decision, with its plan on a dry run, the roots that failed, discovery's
// and the audit ledger's errors.
func (r *retainReport) fromPass(rep *worker.Report) {
	r.withRoot = r.withRoot || len(rep.Roots) > 1
	r.interrupted = rep.Interrupted
	r.discovery = append(r.discovery, rep.RootErrors...)
	for _, err := range rep.LedgerErrors {
		r.ledgerErrors = append(r.ledgerErrors, err.Error())
	}
	for _, rr := range rep.Roots {
		root := ""
		if r.withRoot {
			root = rr.Root
		}
		if rr.Err != nil {
			r.failRoot(rr.Root, rr.Err)
		}
		for _, d := range rr.Retention {
			result, reason := retainResult(d, r.dryRun), strings.TrimPrefix(d.Detail, "version retention: ")
			if result == string(outcome.ReasonShortTTL) && r.shortTTL == "" {
				r.shortTTL = reason
			}
			if r.dryRun {
				row, ok := r.planned[rr.Root+"\x00"+d.Table]
				if !ok {
					row = retainJSON{Kept: []uint64{}, Removed: []uint64{}, Files: []fileJSON{}}
					row.Name, row.Location = jsonName(d.Table)
				}
				row.Root, row.Result, row.Reason = root, result, reason
				if result == reaper.RetentionPlanned || result == reaper.RetentionNothingToDo {
					row.Reason = ""
					if d.Record != nil {
						row.Reason = reason
					}
				}
				r.plans = append(r.plans, row)
				continue
			}
			if result == reaper.RetainCleaned || result == reaper.RetentionNothingToDo && d.Record == nil {
				reason = ""
			}
			run := retainRunJSON{Root: root, Result: result, Reason: reason,
				VersionsDeleted: d.Versions, Objects: d.Objects, Bytes: d.Bytes, Finished: d.Resumed}
			run.Name, run.Location = jsonName(d.Table)
			r.runs = append(r.runs, run)
		}
	}
	r.planned = nil
}

// retainResult is the word a table's row says: planned (a dry run's
// plan), cleaned, failed, held, conflict, or the reason it was skipped
// (nothing_to_do, unsupported, paused, locked, short_ttl, limit,
// shutdown...).
func retainResult(d worker.Retained, dryRun bool) string {
	switch d.Action {
	case outcome.DryRun:
		return reaper.RetentionPlanned
	case outcome.Cleaned, outcome.Failed, outcome.Held, outcome.Conflict:
		return string(d.Action)
	}
	return string(d.Reason)
}

// retainJSONOfPlan is one table's plan as the dry run's JSON lists it.
func retainJSONOfPlan(root string, pl lifecycle.RetentionPlan) retainJSON {
	t := retainJSON{Root: root, Result: string(pl.Result), Reason: pl.Reason, Kept: []uint64{}, Removed: []uint64{},
		Files: []fileJSON{}, Bytes: pl.Plan.Bytes, Versions: pl.Versions, cutoff: pl.Plan.Cutoff, now: pl.Now,
		KeptForOthers: pl.KeptForOthers, KeptFor: pl.KeptFor}
	t.Name, t.Location = jsonName(pl.Name)
	for _, k := range pl.Plan.Kept {
		t.Kept = append(t.Kept, k.Version)
		t.KeptWhy = append(t.KeptWhy, keptJSON{Version: k.Version, Why: k.Why})
	}
	t.Removed = append(t.Removed, pl.Plan.Removed...)
	for _, f := range pl.Plan.Files {
		t.Files = append(t.Files, fileJSON{Key: f.Key, Bytes: f.Bytes, Why: f.Why})
	}
	if rec := pl.Record; rec != nil {
		t.Record = &recordJSON{Owner: rec.Owner, Created: formatTime(rec.Created), Cutoff: formatTime(rec.Cutoff),
			Versions: rec.Versions, Files: rec.Files, StillTrue: rec.StillTrue}
	}
	return t
}

// failed counts the tables that failed.
func (r *retainReport) failed() (failed, all int) {
	for _, pl := range r.plans {
		if pl.Result == reaper.RetentionFailed {
			failed++
		}
	}
	for _, row := range r.runs {
		if row.Result == "failed" {
			failed++
		}
	}
	return failed, len(r.plans) + len(r.runs)
}

// finish prints the report and returns the exit status's error.
func (r *retainReport) finish(ctx context.Context, o retainOptions, stdout io.Writer) error {
	failed, all := r.failed()
	var err error
	switch {
	case o.Output == formatJSON:
		err = r.writeJSON(stdout)
	case o.Quiet && failed == 0 && len(r.failedRoots) == 0 && len(r.discovery) == 0 && len(r.ledgerErrors) == 0:
		// -q: nothing to say when nothing failed.
	case r.dryRun:
		err = r.renderPlans(stdout, o.Verbose)
	default:
		err = r.renderRuns(stdout)
	}
	if err != nil {
		return err
	}
	switch {
	case r.shortTTL != "":
		return usagef("retain: %s", r.shortTTL)
	case r.interrupted:
		return &failedError{op: "retain", msg: "retain interrupted: some tables were not cleaned; run retain again to finish"}
	case len(r.ledgerErrors) > 0:
		return &failedError{op: "retain", msg: fmt.Sprintf("retain: %d audit ledger write(s) failed, the audit trail of this pass may be incomplete: %s", len(r.ledgerErrors), r.ledgerErrors[0])}
	case r.misconfigured > 0:
		// The report names each root and what to set.
		return usagef("retain: %d root(s) could not be reached, a configuration error (ROOTS FAILED above, or failed_roots in the JSON, say what to set); nothing in them was retained", r.misconfigured)
	case len(r.failedRoots) > 0:
		return &failedError{op: "retain", msg: fmt.Sprintf("retain: %d root(s) could not be read and %d table(s) failed; see the lines above", len(r.failedRoots), failed)}
	case failed > 0:
		return &failedError{op: "retain", failed: failed, all: all}
	case len(r.discovery) > 0:
		return &failedError{op: "retain", msg: "retain: root discovery incomplete, some roots were not visited: " + strings.Join(r.discovery, "; ")}
	}
	return nil
}

// retainJSON is one table of `retain --dry-run -o json`.
type retainJSON struct {
	Root string `json:"root,omitempty"`
	Name string `json:"name"`
	// Location is a namespaced table's directory (jsonName).
	Location string     `json:"location,omitempty"`
	Result   string     `json:"result"`
	Reason   string     `json:"reason,omitempty"`
	Kept     []uint64   `json:"versions_kept"`
	Removed  []uint64   `json:"versions_removed"`
	Files    []fileJSON `json:"files"`
	Bytes    int64      `json:"bytes"`
	Versions int        `json:"versions"`
	// KeptWhy says why each kept version is kept; Record is a record of an
	// interrupted run found beside the table.
	KeptWhy []keptJSON  `json:"kept,omitempty"`
	Record  *recordJSON `json:"record,omitempty"`
	// KeptForOthers counts the files kept because other tables of the root
	// (KeptFor) read them through base paths (shallow clones).
	KeptForOthers int    `json:"kept_for_others,omitempty"`
	KeptFor       string `json:"kept_for,omitempty"`
	// cutoff and now (the store's clock the plan was judged at) are for
	// the table form's note.
	cutoff, now time.Time
}

type keptJSON struct {
	Version uint64 `json:"version"`
	Why     string `json:"why"`
}

// recordJSON is a retention record of an interrupted run and what of it is
// still true.
type recordJSON struct {
	Owner     string `json:"owner"`
	Created   string `json:"created"`
	Cutoff    string `json:"cutoff"`
	Versions  int    `json:"versions"`
	Files     int    `json:"files"`
	StillTrue int    `json:"files_still_true"`
}

type fileJSON struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
	Why   string `json:"why"`
}

// writeJSON writes {"tables":[...]} (plans or runs), and "failed_roots"
// when a root could not be read.
func (r *retainReport) writeJSON(w io.Writer) error {
	out := struct {
		Tables      any              `json:"tables"`
		FailedRoots []failedRootJSON `json:"failed_roots,omitempty"`
		Discovery   []string         `json:"discovery_errors,omitempty"`
	}{Tables: r.runs, FailedRoots: r.failedRoots, Discovery: r.discovery}
	if r.dryRun {
		out.Tables = r.plans
		if r.plans == nil {
			out.Tables = []retainJSON{}
		}
	} else if r.runs == nil {
		out.Tables = []retainRunJSON{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// header is the table form's header, with a ROOT column over roots.
func (r *retainReport) header(cols ...string) string {
	if r.withRoot {
		cols = append([]string{"ROOT"}, cols...)
	}
	return strings.Join(cols, "\t")
}

// cells joins a row's cells, its root first over roots.
func (r *retainReport) cells(root string, cells ...string) string {
	if r.withRoot {
		cells = append([]string{safeText(root)}, cells...)
	}
	return strings.Join(cells, "\t")
}

func (r *retainReport) renderPlans(w io.Writer, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, r.header("NAME", "RESULT", "VERSIONS", "REMOVED", "FILES", "BYTES", "NOTE"))
	var files, bytes int64
	var tables, unsupported int
	for _, p := range r.plans {
		note := "-"
		switch {
		case p.Reason != "":
			note = p.Reason
		case len(p.Removed) > 0:
			note = fmt.Sprintf("would remove versions %s; cutoff %s", versionRange(p.Removed), formatTime(p.cutoff))
		}
		if !p.now.IsZero() && p.cutoff.After(p.now) {
			note += fmt.Sprintf(" (in the future by the store's clock, %s: no version is kept for its age)", formatTime(p.now))
		}
		fmt.Fprintln(tw, r.cells(p.Root, displayName(p.Name), p.Result, fmt.Sprint(p.Versions), fmt.Sprint(len(p.Removed)),
			fmt.Sprint(len(p.Files)), humanBytes(p.Bytes), safeText(note)))
		if p.Result == reaper.RetentionPlanned {
			tables++
			files += int64(len(p.Files))
			bytes += p.Bytes
		}
		if p.Result == reaper.RetentionUnsupported {
			unsupported++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if verbose {
		if err := r.renderFiles(w); err != nil {
			return err
		}
	}
	if err := r.renderFailedRoots(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "dry run, nothing was deleted: would remove %d files, %s from %d tables; %d unsupported%s\n",
		files, humanBytes(bytes), tables, unsupported, r.rootsSummary())
	return err
}

// renderFiles lists, under the table of a dry run, each planned table's
// versions kept (and why) and every file it would delete (-v).
func (r *retainReport) renderFiles(w io.Writer) error {
	for _, p := range r.plans {
		if len(p.KeptWhy) == 0 && len(p.Files) == 0 {
			continue
		}
		name := displayName(p.Name)
		if p.Root != "" {
			name += " (" + safeText(p.Root) + ")"
		}
		fmt.Fprintf(w, "\n%s: %d versions kept, %d would be removed; %d files to delete, %s\n", name, len(p.KeptWhy), len(p.Removed), len(p.Files), humanBytes(p.Bytes))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range p.KeptWhy {
			fmt.Fprintf(tw, "  kept\tversion %d\t\t%s\n", k.Version, safeText(k.Why))
		}
		for _, f := range p.Files {
			fmt.Fprintf(tw, "  delete\t%s\t%s\t%s\n", safeText(f.Key), humanBytes(f.Bytes), safeText(f.Why))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// renderFailedRoots lists the roots that could not be read.
func (r *retainReport) renderFailedRoots(w io.Writer) error {
	if len(r.failedRoots) == 0 && len(r.discovery) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nROOTS FAILED: %d (not read; nothing in them was retained)\n", len(r.failedRoots)+len(r.discovery))
	fmt.Fprintln(tw, "  ROOT\tERROR")
	for _, f := range r.failedRoots {
		fmt.Fprintf(tw, "  %s\t%s\n", safeText(f.Root), safeText(f.Error))
	}
	for _, d := range r.discovery {
		fmt.Fprintf(tw, "  (discovery)\t%s\n", safeText(d))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// rootsSummary ends the summary line of a run over roots.
func (r *retainReport) rootsSummary() string {
	if n := len(r.failedRoots); n > 0 {
		return fmt.Sprintf("; %d root(s) could not be read", n)
	}
	return ""
}

// versionRange renders removed versions compactly: "3-17" or "3, 5, 9-12".
func versionRange(vs []uint64) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(vs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", vs[i], vs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// retainRunJSON is one table of `retain -o json` without --dry-run.
type retainRunJSON struct {
	Root            string `json:"root,omitempty"`
	Name            string `json:"name"`
	Location        string `json:"location,omitempty"`
	Result          string `json:"result"`
	Reason          string `json:"reason,omitempty"`
	VersionsDeleted int    `json:"versions_deleted"`
	Objects         int64  `json:"objects"`
	Bytes           int64  `json:"bytes"`
	Finished        bool   `json:"finished"`
}

func (r *retainReport) renderRuns(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, r.header("NAME", "RESULT", "VERSIONS", "OBJECTS", "BYTES", "NOTE"))
	var versions int
	var objects, bytes int64
	for _, row := range r.runs {
		note := "-"
		switch {
		case row.Reason != "":
			note = row.Reason
		case row.Finished:
			note = "finished an interrupted run"
		}
		fmt.Fprintln(tw, r.cells(row.Root, displayName(row.Name), row.Result, fmt.Sprint(row.VersionsDeleted), fmt.Sprint(row.Objects),
			humanBytes(row.Bytes), safeText(note)))
		versions += row.VersionsDeleted
		objects += row.Objects
		bytes += row.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.renderFailedRoots(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "removed %d versions: %d objects, %s from %d tables%s\n", versions, objects, humanBytes(bytes), len(r.runs), r.rootsSummary())
	return err
}
