package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/stack"
)

// statusOptions are the flags and arguments of `reaper status`.
type statusOptions struct {
	storeOptions
	// Output is table or json.
	Output string
	Names  []string
	// Versions adds the retention columns (status_versions.go) for the
	// policy of policyFlags.
	Versions bool
	policyFlags
}

func (o *statusOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
	fs.BoolVar(&o.Versions, "versions", false, "also read every version of each live table: its versions and what retain with the policy flags would remove (a listing of each table and a read per version)")
	o.policyFlags.register(fs, statusOlderThan)
	fs.Lookup("older-than").Usage = "with --versions: count versions written more than this long ago by the store's clock as removable (e.g. 7d, 36h)"
	fs.Lookup("before").Usage = "with --versions: count versions written before this instant as removable (RFC 3339)"
	fs.Lookup("keep-versions").Usage = "with --versions: count the newest N versions as kept"
	fs.Lookup("delete-unverified").Usage = "with --versions: count files no manifest references as removable whatever their age, as retain --delete-unverified would"
	fs.Lookup("unverified-after").Usage = "with --versions: count a file no manifest references as removable from this age (a write in progress is younger)"
}

func newStatusCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := statusOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "status --root URI [--versions [--older-than D | --before TIME]] [-o table|json] [NAME...]",
		Short: "Show the lifecycle state of tables",
		Long: `Show the state of each named table, or of every name in the root: exists,
soft_deleted, purging, orphan_marker (marker left, data gone),
invalid_marker (never purged) or not_found, with deleted_at, TTL, purge
time and notes (due, due in 3h, problems, lease holder). It reads the root
with one listing and one read per marker; it changes nothing. Rows are
printed as the listing passes each name, so a root of millions of tables
prints as it is read; the table's columns are aligned over blocks of
10,000 rows. A table in a LanceDB namespace shows by its object id, the
namespace path and the table name joined by "$" (tenant_a$inner; name it so,
quoted, or with --namespace tenant_a inner), at the place of its directory
<8 hex>_<object id>/ in the root, and costs a listing of that directory;
deregistered marks one LanceDB deregistered, not_a_table such a directory
without versions (a name LanceDB reserved). JSON adds "namespace" and
"location" (the directory) for those tables.

JSON (-o json) is an array of objects with name, state, deleted_at_ms,
ttl_ms, purge_after_ms, due, below_min_ttl (purge skips it: its TTL is below
safety.min_ttl), problem, lease_owner, lease_expires_at_ms, held and
hold_reason; fields that do not apply are null.

--versions also reads every manifest of each live table (a listing of the
table and a read per version: far more requests than a status) and adds
VERSIONS, SIZE, REMOVABLE and RECLAIMABLE: the table's versions and size
(every file of its _versions/, _transactions/, data/, _indices/ and
_deletions/), and the versions and bytes 'reaper retain' with the same
--older-than (7d when neither it nor --before is given, as LanceDB's
optimize: the last line says so), --before, --keep-versions,
--delete-unverified and --unverified-after would remove, with their share
of the size; a table retain would refuse says why (unsupported). The last
line sums them, and says when retain would refuse the policy (a cutoff
below safety.min_ttl, a --before in the future). A few tables are read at
once while the rows go out. JSON then adds versions, table_bytes,
reclaimable_versions, reclaimable_bytes, reclaimable_percent, retention
(planned, nothing_to_do, unsupported, failed), retention_reason and
retention_policy; a policy retain would refuse is a warning on stderr. A
root that uses LanceDB namespaces shows a row for their catalog,
__manifest (namespace_catalog), with its versions: it grows with every
namespace operation and reaper never removes any.

Exit status: 0 on success (whatever the states), 1 when the root cannot be
read, 2 on usage errors.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runStatus(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runStatus prints the state of the named tables, or of the whole root.
func runStatus(ctx context.Context, o statusOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	names, err := o.tableNames("status", o.Names, false)
	if err != nil {
		return err
	}
	defaulted := o.Versions && o.OlderThan == 0 && o.Before == ""
	o.Names = names
	policy, err := o.statusPolicy()
	if err != nil {
		return err
	}
	policyName := policyText(o.policyFlags)
	floor, err := o.ttlFloor()
	if err != nil {
		return err
	}
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	// Rows are printed as the root's listing passes each name, judged by
	// the store's clock, as purge judges them.
	var p statusPrinter
	var versions *versionColumns
	switch {
	case o.Output == formatJSON:
		jp := newStatusJSON(stdout, floor)
		jp.versions = o.Versions
		if jp.policy = policyName; defaulted {
			jp.policy += " (status's default, as LanceDB's optimize())"
		}
		p = jp
	case o.Versions:
		tp := newStatusVersionsTable(stdout, floor, policyName, defaulted)
		p, versions = tp, tp.versions
	default:
		p = newStatusTable(stdout, floor)
	}
	var now time.Time // the store's clock, as the rows were judged
	rows := 0
	if o.Versions {
		err = ns.EachStatusRetention(ctx, policy, func(s reaper.TableStatus, sum *reaper.RetentionSummary, at time.Time) error {
			now, rows = at, rows+1
			return p.rowWith(s, sum, at)
		}, o.Names...)
	} else {
		err = ns.EachStatus(ctx, func(s reaper.TableStatus, at time.Time) error {
			rows++
			return p.row(s, at)
		}, o.Names...)
	}
	if err != nil {
		_ = p.close(false)
		return storeError(ns.URI(), err)
	}
	if rows == 0 && len(o.Names) == 0 {
		if err := o.emptyRootHint(ctx, ns.URI()); err != nil {
			_ = p.close(false)
			return err
		}
	}
	refusal := ""
	if o.Versions {
		refusal = policyRefusal(policy, now, floor)
	}
	if versions != nil {
		versions.refusal = refusal
	} else if refusal != "" {
		fmt.Fprintf(o.stderr(), "reaper: warning: %s: %s\n", policyName, safeText(refusal))
	}
	return p.close(true)
}

// emptyRootHint is rootHint for status's root (uri, opened), which holds
// no table: the root as given, opened again to be looked into.
func (o statusOptions) emptyRootHint(ctx context.Context, uri string) error {
	given, err := o.rootOrEnv()
	if err != nil {
		return nil
	}
	root, err := resolveRoot(given)
	if err != nil {
		return nil
	}
	so, err := parseStorageOptions(o.StorageOptions)
	if err != nil {
		return nil
	}
	store, err := stack.Open(stack.WithWrapBackend(ctx, o.wrapStore), uri, so, stack.Options{})
	if err != nil {
		return nil
	}
	return rootHint(ctx, "status", store, root)
}
