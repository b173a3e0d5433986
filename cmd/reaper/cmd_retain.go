package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
)

// retainOptions are the flags and arguments of `reaper retain`.
type retainOptions struct {
	storeOptions
	OlderThan        time.Duration
	Before           string
	KeepVersions     int
	DeleteUnverified bool
	UnverifiedAfter  time.Duration
	DryRun           bool
	AllowShortTTL    bool
	Output           string
	Names            []string
}

func (o *retainOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	fs.Var(newDurationValue(&o.OlderThan, 0), "older-than", "remove versions written more than this long ago by the store's clock (e.g. 7d, 36h)")
	fs.StringVar(&o.Before, "before", "", "remove versions written before this instant (RFC 3339, fractional seconds allowed, e.g. 2026-11-01T00:00:00Z)")
	fs.IntVar(&o.KeepVersions, "keep-versions", 1, "always keep the newest N versions")
	fs.BoolVar(&o.DeleteUnverified, "delete-unverified", false, "also delete files no manifest references whatever their age (only safe when nothing writes to the tables)")
	fs.Var(newDurationValue(&o.UnverifiedAfter, 7*24*time.Hour), "unverified-after", "age from which a file no manifest references is deleted (a write in progress is younger)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan and report what would be deleted; delete nothing")
	fs.BoolVar(&o.AllowShortTTL, "allow-short-ttl", false, "allow a cutoff newer than safety.min_ttl ago")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
}

func newRetainCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := retainOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "retain --root URI (--older-than D | --before TIME) [--dry-run] [-o table|json] [TABLE...]",
		Short: "Remove old versions of live tables (version retention), or plan it with --dry-run",
		Long: `Remove the old versions of the named live tables, or of every live table of
the root, and every file only they reference: file for file what Lance's own
cleanup_old_versions would delete for the same policy, under the table's
reaper lease and safe beside LanceDB writers (docs/RETENTION.md). Time travel
to a removed version is gone for good. Soft-deleted tables are left to purge.
A table reaper does not fully understand (an unknown Lance feature flag, a
manifest it cannot parse, managed blobs) is reported unsupported and nothing
of it is ever deleted. A legal hold or the root's PAUSE switch stops a table.

--dry-run reads every version and lists what would go: the versions kept and
removed and each file with its size and why. JSON (-o json) with --dry-run:
{"tables":[{"name","result","reason","versions_kept","versions_removed",
"files":[{"key","bytes","why"}],"bytes"}]}, keys relative to the root; result
is planned, nothing_to_do, unsupported or failed. Without --dry-run:
{"tables":[{"name","result","reason","versions_deleted","objects","bytes",
"finished"}]}; result is cleaned, nothing_to_do, unsupported, held, paused,
locked or failed (finished: it completed a run that was interrupted).

Exit status: 0 when no table failed (unsupported, held, paused and locked
tables are listed), 1 when a table failed, 2 on usage errors.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runRetain(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// policy checks the flags and builds the policy.
func (o retainOptions) policy() (reaper.RetentionPolicy, error) {
	p := reaper.RetentionPolicy{OlderThan: o.OlderThan, KeepVersions: o.KeepVersions,
		DeleteUnverified: o.DeleteUnverified, UnverifiedAfter: o.UnverifiedAfter}
	switch {
	case o.OlderThan == 0 && o.Before == "":
		return p, usagef("retain: pass --older-than (e.g. --older-than 7d) or --before (an RFC 3339 instant)")
	case o.OlderThan != 0 && o.Before != "":
		return p, usagef("retain: pass either --older-than or --before, not both")
	case o.KeepVersions < 1:
		return p, usagef("retain: --keep-versions %d: the newest version is always kept; pass 1 or more", o.KeepVersions)
	}
	if o.Before != "" {
		t, err := time.Parse(time.RFC3339Nano, o.Before)
		if err != nil {
			return p, usagef("retain: --before %q: want an RFC 3339 instant such as 2026-11-01T00:00:00Z or 2026-11-01T00:00:00.250+01:00", o.Before)
		}
		p.Before = t
	}
	return p, nil
}

// envLeaseTTL is defaults.lease_ttl as purge reads it without a config
// file: REAPER_DEFAULTS_LEASE_TTL, else the default. retain holds each
// table's lease that long (renewed at a third of it), so that a run frozen
// or killed mid-table is taken over as a purge's would be.
func (g globalOptions) envLeaseTTL() (time.Duration, error) {
	c, err := config.Load("", g.lookup)
	if err != nil {
		return 0, asUsage(err)
	}
	if d := c.Defaults.LeaseTTL.D(); d <= 0 {
		return 0, usagef("REAPER_DEFAULTS_LEASE_TTL=%s: the lease length must be positive, e.g. 2m", d)
	}
	return c.Defaults.LeaseTTL.D(), nil
}

// runRetain plans retention on one root and prints the plans.
func runRetain(ctx context.Context, o retainOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	if err := validateNames(o.Names); err != nil {
		return err
	}
	p, err := o.policy()
	if err != nil {
		return err
	}
	floor, err := o.ttlFloor()
	if err != nil {
		return err
	}
	if o.LeaseTTL, err = o.envLeaseTTL(); err != nil {
		return err
	}
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	now, err := ns.StoreNow(ctx)
	if err != nil {
		return storeError(ns.URI(), err)
	}
	cutoff := now.Add(-p.OlderThan)
	if !p.Before.IsZero() {
		cutoff = p.Before
	}
	if age := now.Sub(cutoff); age < floor && !o.AllowShortTTL {
		return usagef("retain: the cutoff %s is %s before the store's clock, less than safety.min_ttl %s: versions that recent may still be read; pass --allow-short-ttl to plan it anyway",
			formatTime(cutoff), formatDuration(max(age, 0)), formatDuration(floor))
	}
	if !o.DryRun {
		return runRetainDeleting(ctx, ns, p, o, stdout)
	}
	plans, err := ns.PlanRetention(ctx, p, o.Names...)
	if err != nil {
		return storeError(ns.URI(), err)
	}
	if o.Output == formatJSON {
		err = renderRetainJSON(stdout, plans)
	} else {
		err = renderRetainTable(stdout, plans)
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, pl := range plans {
		if pl.Result == reaper.RetentionFailed {
			failed++
		}
	}
	if failed > 0 {
		return &failedError{op: "retain", failed: failed, all: len(plans)}
	}
	return nil
}

// retainJSON is one table of `retain -o json`.
type retainJSON struct {
	Name     string     `json:"name"`
	Result   string     `json:"result"`
	Reason   string     `json:"reason,omitempty"`
	Kept     []uint64   `json:"versions_kept"`
	Removed  []uint64   `json:"versions_removed"`
	Files    []fileJSON `json:"files"`
	Bytes    int64      `json:"bytes"`
	Versions int        `json:"versions"`
}

type fileJSON struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
	Why   string `json:"why"`
}

func renderRetainJSON(w io.Writer, plans []reaper.RetentionPlan) error {
	out := struct {
		Tables []retainJSON `json:"tables"`
	}{Tables: []retainJSON{}}
	for _, p := range plans {
		t := retainJSON{Name: p.Name, Result: p.Result, Reason: p.Reason, Kept: []uint64{}, Removed: []uint64{},
			Files: []fileJSON{}, Bytes: p.Bytes, Versions: p.Versions}
		for _, k := range p.Kept {
			t.Kept = append(t.Kept, k.Version)
		}
		t.Removed = append(t.Removed, p.Removed...)
		for _, f := range p.Files {
			t.Files = append(t.Files, fileJSON{Key: f.Key, Bytes: f.Bytes, Why: f.Why})
		}
		out.Tables = append(out.Tables, t)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func renderRetainTable(w io.Writer, plans []reaper.RetentionPlan) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRESULT\tVERSIONS\tREMOVED\tFILES\tBYTES\tNOTE")
	var files, bytes int64
	var tables, unsupported int
	for _, p := range plans {
		note := "-"
		switch {
		case p.Reason != "":
			note = p.Reason
		case len(p.Removed) > 0:
			note = fmt.Sprintf("versions %s removed; cutoff %s", versionRange(p.Removed), formatTime(p.Cutoff))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", displayName(p.Name), p.Result, p.Versions, len(p.Removed),
			len(p.Files), humanBytes(p.Bytes), safeText(note))
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
	_, err := fmt.Fprintf(w, "dry run, nothing was deleted: would remove %d files, %s from %d tables; %d unsupported\n",
		files, humanBytes(bytes), tables, unsupported)
	return err
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
	Name            string `json:"name"`
	Result          string `json:"result"`
	Reason          string `json:"reason,omitempty"`
	VersionsDeleted int    `json:"versions_deleted"`
	Objects         int64  `json:"objects"`
	Bytes           int64  `json:"bytes"`
	Finished        bool   `json:"finished"`
}

// runRetainDeleting cleans each live table in turn and prints the results.
func runRetainDeleting(ctx context.Context, ns *reaper.Namespace, p reaper.RetentionPolicy, o retainOptions, stdout io.Writer) error {
	names := o.Names
	if len(names) == 0 {
		all, err := ns.List(ctx)
		if err != nil {
			return storeError(ns.URI(), err)
		}
		for _, s := range all {
			if s.State == reaper.StateExists {
				names = append(names, s.Name)
			}
		}
	}
	var rows []retainRunJSON
	failed := 0
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		res, err := ns.Retain(ctx, name, reaper.RetainOptions{Policy: p})
		row := retainRunJSON{Name: name, Result: res.Outcome, VersionsDeleted: res.VersionsRemoved,
			Objects: res.Objects, Bytes: res.Bytes, Finished: res.Finished}
		if err != nil {
			row.Result, row.Reason = retainFailure(err), err.Error()
		}
		if row.Result == "failed" {
			failed++
		}
		rows = append(rows, row)
	}
	if o.Output == formatJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []retainRunJSON{}
		}
		if err := enc.Encode(struct {
			Tables []retainRunJSON `json:"tables"`
		}{rows}); err != nil {
			return err
		}
	} else if err := renderRetainRun(stdout, rows); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if failed > 0 {
		return &failedError{op: "retain", failed: failed, all: len(rows)}
	}
	return nil
}

// retainFailure names what stopped a table's run.
func retainFailure(err error) string {
	switch {
	case errors.Is(err, reaper.ErrUnsupportedTable):
		return reaper.RetentionUnsupported
	case errors.Is(err, reaper.ErrHeld):
		return "held"
	case errors.Is(err, reaper.ErrPaused):
		return "paused"
	case errors.Is(err, reaper.ErrLocked):
		return "locked"
	}
	return "failed"
}

func renderRetainRun(w io.Writer, rows []retainRunJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRESULT\tVERSIONS\tOBJECTS\tBYTES\tNOTE")
	var versions int
	var objects, bytes int64
	for _, r := range rows {
		note := "-"
		switch {
		case r.Reason != "":
			note = r.Reason
		case r.Finished:
			note = "finished an interrupted run"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", displayName(r.Name), r.Result, r.VersionsDeleted, r.Objects, humanBytes(r.Bytes), safeText(note))
		versions += r.VersionsDeleted
		objects += r.Objects
		bytes += r.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "removed %d versions: %d objects, %s from %d tables\n", versions, objects, humanBytes(bytes), len(rows))
	return err
}
