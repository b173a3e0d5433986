package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
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
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan and report; delete nothing (required: this version only plans)")
	fs.BoolVar(&o.AllowShortTTL, "allow-short-ttl", false, "allow a cutoff newer than safety.min_ttl ago")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
}

func newRetainCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := retainOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "retain --root URI (--older-than D | --before TIME) --dry-run [-o table|json] [TABLE...]",
		Short: "Plan what removing old versions of live tables frees (version retention)",
		Long: `Plan version retention on the named live tables, or on every live table of
the root: read every version of each table and list, file for file, what
Lance's own cleanup_old_versions would delete for the same policy (the
versions kept and removed, each file with its size and why). Soft-deleted
tables are left to purge. A table reaper does not fully understand (an
unknown Lance feature flag, a manifest it cannot parse, managed blobs) is
reported unsupported and nothing of it is ever planned. docs/RETENTION.md
states the rules.

This version plans only: --dry-run is required, and nothing is deleted.

JSON (-o json): {"tables":[{"name","result","reason","versions_kept",
"versions_removed","files":[{"key","bytes","why"}],"bytes"}]}, keys relative
to the root; result is planned, nothing_to_do, unsupported or failed.

Exit status: 0 when every table was planned (or had nothing to do, or is
unsupported: listed), 1 when a table could not be read, 2 on usage errors.`,
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
	case !o.DryRun:
		return p, usagef("retain: pass --dry-run: this version plans retention and deletes nothing")
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
