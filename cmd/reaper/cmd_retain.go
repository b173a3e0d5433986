package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/retention"
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
	// Verbose lists, in a dry run's table form, each table's versions kept
	// and files to delete.
	Verbose bool
}

func (o *retainOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
	o.passFlags.register(fs)
	fs.Lookup("allow-short-ttl").Usage = "allow a cutoff newer than safety.min_ttl ago"
	o.policyFlags.register(fs, 0)
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan and report what would be deleted; delete nothing")
	fs.BoolVar(&o.Progress, "progress", false, "print each table's progress on stderr while its old versions are removed: objects done of the total, rate and ETA (a line a second per table); with --dry-run, a line per table as soon as it is planned")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "with --dry-run, list under the table each table's versions kept (and why) and every file it would delete, with its size and why (-o json always has them)")
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
of it is ever deleted. Tables in LanceDB namespaces are covered: name one by
its object id, quoted ('tenant_a$inner'), or with --namespace tenant_a inner
(JSON adds its directory as "location"); with a configuration, a root's
retention.namespaces switches retention per namespace. LanceDB's namespace
catalog (__manifest/) is never touched. A version goes only when both its manifest's timestamp
and the store's LastModified of it are before the cutoff.

retain is one pass, as purge is, with the purges left out: it reads the same
switches (dry_run, paused and REAPER_PAUSED, the root's _reaper/PAUSE,
safety.deletions_enabled), limits (limits.*) and audit ledger
(audit.location) from the environment (REAPER_*) and, with --config, the
file. A legal hold stops a table. A cutoff or --unverified-after below
safety.min_ttl is refused unless --allow-short-ttl. A record left beside a
table by a run that was cut short is taken over only as far as it is still
true: the current policy decides which versions go.

--dry-run reads every version and lists what would go: in the table, each
table's versions and files to remove, and with -v the versions kept (and
why) and each file with its size and why. JSON (-o json) with --dry-run:
{"tables":[{"name","result","reason","versions_kept","versions_removed",
"kept":[{"version","why"}],"files":[{"key","bytes","why"}],"bytes",
"record"}]}, keys relative to the root; result is planned, nothing_to_do,
unsupported, failed, or why the table was skipped (paused, short_ttl,
limit...). Without --dry-run: {"tables":[{"name","result","reason",
"versions_deleted","objects","bytes","finished"}]}; result is cleaned,
nothing_to_do, unsupported, held, paused, locked, short_ttl, limit, conflict
or failed (finished: it took over a record of an interrupted run).

With --config (or --set, --shard, --pushgateway, --textfile) retain covers
every root of the configuration, the configured roots and those its discover
patterns find, as purge --config does; --root replaces them. The rows then
carry their root (a ROOT column, "root" in the JSON), and roots that could
not be read are listed (ROOTS FAILED, "failed_roots"). Without --older-than
and --before each root takes the policy of its retention section (retention:
at the top, or the root's or its discover pattern's own), and the roots
where it is not enabled are left out. A run over every live table of a root
sets reaper_retention_reclaimable_bytes and
reaper_retention_reclaimable_versions of that root (what retention would
still remove: all of the plan in a dry run, what is left after a run),
pushed or written with --pushgateway or --textfile (metrics.pushgateway,
metrics.textfile).

Exit status: 0 when no table failed (unsupported, held, paused and locked
tables are listed), 1 when a table or a root failed, root discovery was
incomplete, the run was interrupted, an audit ledger write failed or the
metrics could not be exported, 2 on usage errors (a cutoff below
safety.min_ttl, roots the configuration cannot reach: credentials, a
missing bucket).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runRetain(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runRetain runs one version-retention pass, over the --root or every
// root of the configuration, through the one assembly a purge pass has
// (assembly.Parts.Retainer): the kill switches (dry_run, paused,
// REAPER_PAUSED, PAUSE, safety.deletions_enabled), the floors, the limits
// and the audit ledger are read the same way. It prints the report.
func runRetain(ctx context.Context, o retainOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	names, err := o.tableNames("retain", o.Names, false)
	if err != nil {
		return err
	}
	o.Names = names
	var policy *retention.Policy
	if o.OlderThan != 0 || o.Before != "" {
		p, err := o.policy("retain")
		if err != nil {
			return err
		}
		policy = &retention.Policy{OlderThan: p.OlderThan, Before: p.Before, KeepVersions: p.KeepVersions,
			DeleteUnverified: p.DeleteUnverified, UnverifiedAfter: p.UnverifiedAfter}
	} else if o.KeepVersions > 1 || o.DeleteUnverified || o.UnverifiedAfter != 0 {
		return usagef("retain: --keep-versions, --delete-unverified and --unverified-after go with --older-than or --before; without them each root's retention section sets them")
	}
	withRoot := o.configured()
	if o.DryRun {
		o.Sets = append(o.Sets, "dry_run=true")
	}
	rt, err := newRuntime(ctx, o.storeOptions, o.passFlags)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := checkRetainPolicy(rt.cfg, policy, o.ConfigPath != ""); err != nil {
		return err
	}
	if err := reachRoot(ctx, "retain", o.ConfigPath != "", rt); err != nil {
		return err
	}
	rep := retainReport{dryRun: rt.cfg.DryRun || !rt.cfg.Safety.DeletesEnabled(), withRoot: withRoot, progress: o.progress()}
	w := rt.parts.Retainer(policy)
	w.Tables = o.Names
	w.OnRetentionPlan = rep.plan
	if o.Progress {
		w.OnProgress = rep.progress.printer.event
	}
	pass, err := w.Pass(ctx, func() bool { return draining(ctx) })
	if err != nil {
		return err
	}
	exportErr := rt.export(ctx)
	if exportErr != nil {
		rt.log.Error("export metrics", "error", exportErr)
	}
	if err := emptyRootHint(ctx, "retain", rt, pass, o.Names, o.ConfigPath != ""); err != nil {
		return err
	}
	rep.fromPass(pass)
	if err := rep.finish(ctx, o, stdout); err != nil {
		return err
	}
	if exportErr != nil {
		return &failedError{op: "retain", msg: exportErr.Error()}
	}
	return nil
}

// configured reports whether retain names the roots by a configuration
// (--config, --set, --shard, --pushgateway or --textfile): its rows then
// carry their root.
func (o retainOptions) configured() bool {
	return o.ConfigPath != "" || len(o.Sets) > 0 || o.Shard != "" || o.Pushgateway != "" || o.Textfile != ""
}

// checkRetainPolicy refuses, before anything is read, what no root of the
// pass could be cleaned with: a policy below safety.min_ttl whatever the
// store's clock says (--older-than, --unverified-after; a --before is
// judged at each root's clock by the pass), or no policy at all where no
// root enables retention. fromFile: a configuration file was given, whose
// retention sections may set the policy.
func checkRetainPolicy(cfg config.Config, policy *retention.Policy, fromFile bool) error {
	if policy != nil {
		if !cfg.Safety.AllowShortTTL && policy.Before.IsZero() {
			if err := policy.CheckFloor(time.Now(), cfg.Safety.MinTTL.D()); err != nil {
				return usagef("retain: %v; pass --allow-short-ttl to plan it anyway", err)
			}
		}
		return nil
	}
	enabled, all := 0, len(cfg.Roots)+len(cfg.Discover)
	for _, l := range [][]config.Root{cfg.Roots, cfg.Discover} {
		for _, r := range l {
			if cfg.RetentionFor(r.Retention).AnyEnabled() {
				enabled++
			}
		}
	}
	switch {
	case all == 0:
		return nil // the runtime said what roots are missing
	case enabled == 0 && !fromFile:
		return usagef("retain: pass --older-than (e.g. --older-than 7d) or --before (an RFC 3339 instant)")
	case enabled == 0:
		return usagef("retain: retention is enabled on none of the %d root(s) of the configuration: pass --older-than or --before, or set retention.enabled: true (at the top, or in a root's or discover pattern's retention section)", all)
	}
	return nil
}
