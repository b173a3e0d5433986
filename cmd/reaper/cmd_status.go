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
}

func (o *statusOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
}

func newStatusCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := statusOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "status --root URI [-o table|json] [NAME...]",
		Short: "Show the lifecycle state of tables",
		Long: `Show the state of each named table, or of every name in the root: exists,
soft_deleted, purging, orphan_marker (marker left, data gone),
invalid_marker (never purged) or not_found, with deleted_at, TTL, purge
time and notes (due, due in 3h, problems, lease holder). It reads the root
with one listing and one read per marker; it changes nothing. Rows are
printed as the listing passes each name, so a root of millions of tables
prints as it is read; the table's columns are aligned over blocks of
10,000 rows.

JSON (-o json) is an array of objects with name, state, deleted_at_ms,
ttl_ms, purge_after_ms, due, below_min_ttl (purge skips it: its TTL is below
safety.min_ttl), problem, lease_owner, lease_expires_at_ms, held and
hold_reason; fields that do not apply are null.

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
	if err := validateNames(o.Names); err != nil {
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
	var p statusPrinter = newStatusTable(stdout, floor)
	if o.Output == formatJSON {
		p = newStatusJSON(stdout, floor)
	}
	err = ns.EachStatus(ctx, p.row, o.Names...)
	if err != nil {
		_ = p.close(false)
		return storeError(ns.URI(), err)
	}
	return p.close(true)
}
