package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
VERSIONS, REMOVABLE and RECLAIMABLE: the table's versions, and the versions
and bytes 'reaper retain' with the same --older-than (7d by default, as
LanceDB's optimize), --before, --keep-versions, --delete-unverified and
--unverified-after would remove; a table retain would refuse says why
(unsupported). A root that uses LanceDB namespaces shows a row for their
catalog, __manifest (namespace_catalog), with its versions: it grows with
every namespace operation and reaper never removes any. A few tables are
read at once while the rows go out. JSON
then adds versions, reclaimable_versions, reclaimable_bytes, retention
(planned, nothing_to_do, unsupported, failed) and retention_reason.

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
	o.Names = names
	policy, err := o.statusPolicy()
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
	// Rows are printed as the root's listing passes each name, judged by
	// the store's clock, as purge judges them.
	var p statusPrinter
	switch {
	case o.Output == formatJSON:
		jp := newStatusJSON(stdout, floor)
		jp.versions = o.Versions
		p = jp
	case o.Versions:
		p = newStatusVersionsTable(stdout, floor, policyText(o.policyFlags))
	default:
		p = newStatusTable(stdout, floor)
	}
	if o.Versions {
		err = ns.EachStatusRetention(ctx, policy, p.rowWith, o.Names...)
	} else {
		err = ns.EachStatus(ctx, p.row, o.Names...)
	}
	if err != nil {
		_ = p.close(false)
		return storeError(ns.URI(), err)
	}
	return p.close(true)
}
