package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
)

// retainOptions are the flags and arguments of `reaper retain`.
type retainOptions struct {
	storeOptions
	// passFlags: --config, --set, --shard, --pushgateway and --textfile
	// run retain over every root of the configuration (retain_roots.go);
	// --allow-short-ttl is read on every path.
	passFlags
	policyFlags
	DryRun bool
	Output string
	Names  []string
	// Progress prints each cleaned table's progress on stderr.
	Progress bool
}

func (o *retainOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.passFlags.register(fs)
	fs.Lookup("allow-short-ttl").Usage = "allow a cutoff newer than safety.min_ttl ago"
	o.policyFlags.register(fs, 0)
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan and report what would be deleted; delete nothing")
	fs.BoolVar(&o.Progress, "progress", false, "print each table's progress on stderr while its old versions are removed: objects done of the total, rate and ETA (a line a second per table); with --dry-run, a line per table as soon as it is planned")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
}

func newRetainCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := retainOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "retain (--root URI | --config FILE) (--older-than D | --before TIME) [--dry-run] [-o table|json] [TABLE...]",
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

With --config (or --set, --shard, --pushgateway, --textfile) retain covers
every root of the configuration, the configured roots and those its discover
patterns find, as purge --config does; --root replaces them. The rows then
carry their root (a ROOT column, "root" in the JSON), and roots that could
not be read are listed (ROOTS FAILED, "failed_roots"). Without --older-than
and --before each root takes the policy of its retention section (retention:
at the top, or the root's or its discover pattern's own), and the roots
where it is not enabled are left out. Every root's clock is read and the
cutoff checked before anything is deleted. A dry run over every
live table of a root sets reaper_retention_reclaimable_bytes and
reaper_retention_reclaimable_versions of that root, pushed or written with
--pushgateway or --textfile (metrics.pushgateway, metrics.textfile).

Exit status: 0 when no table failed (unsupported, held, paused and locked
tables are listed), 1 when a table or a root failed, root discovery was
incomplete or the metrics could not be exported, 2 on usage errors (and
roots the configuration cannot reach: credentials, a missing bucket).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runRetain(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
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

// runRetain plans or runs retention on one root, or on every root of the
// configuration (retain_roots.go), and prints the report.
func runRetain(ctx context.Context, o retainOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	if err := validateNames(o.Names); err != nil {
		return err
	}
	if o.configured() && o.OlderThan == 0 && o.Before == "" {
		// Each root's policy is its retention section's.
		if o.KeepVersions > 1 || o.DeleteUnverified || o.UnverifiedAfter != 0 {
			return usagef("retain: --keep-versions, --delete-unverified and --unverified-after go with --older-than or --before; without them each root's retention section sets them")
		}
		return runRetainRoots(ctx, o, nil, stdout)
	}
	p, err := o.policy("retain")
	if err != nil {
		return err
	}
	if o.configured() {
		return runRetainRoots(ctx, o, &p, stdout)
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
	if err := checkCutoff(p, now, floor, o.AllowShortTTL); err != nil {
		return err
	}
	rep := retainReport{dryRun: o.DryRun, progress: o.progress()}
	if err := rep.root(ctx, "", ns, p, o.Names); err != nil {
		return storeError(ns.URI(), err)
	}
	return rep.finish(ctx, o, stdout)
}

// retainTables cleans each named live table (every live table of the root
// when none are named) in turn, until ctx is cancelled, showing each one's
// progress when show is set. The error is for the root's listing.
func retainTables(ctx context.Context, ns *reaper.Namespace, p reaper.RetentionPolicy, names []string, show *retainProgress) ([]retainRunJSON, error) {
	if len(names) == 0 {
		all, err := ns.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range all {
			if s.State == reaper.StateExists {
				names = append(names, s.Name)
			}
		}
	}
	var rows []retainRunJSON
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		opts := reaper.RetainOptions{Policy: p}
		if show != nil {
			opts.Progress, opts.Planned = show.table(ns.URI(), name)
		}
		res, err := ns.Retain(ctx, name, opts)
		if show != nil {
			show.done(res.Objects, res.Bytes)
		}
		row := retainRunJSON{Name: name, Result: res.Outcome, VersionsDeleted: res.VersionsRemoved,
			Objects: res.Objects, Bytes: res.Bytes, Finished: res.Finished}
		if err != nil {
			row.Result, row.Reason = retainFailure(err), err.Error()
		}
		rows = append(rows, row)
	}
	return rows, nil
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
