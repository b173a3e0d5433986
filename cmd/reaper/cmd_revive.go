package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// reviveOptions are the flags and arguments of `reaper revive`.
type reviveOptions struct {
	storeOptions
	Names []string
}

func (o *reviveOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
}

func newReviveCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o reviveOptions
	cmd := &cobra.Command{
		Use:   "revive --root URI NAME...",
		Short: "Undo soft-deletes: remove <name>.deleted markers, keep the data",
		Long: `Revive each named soft-deleted table: remove its <name>.deleted marker under
the table's lifecycle lease, so a concurrent purge is never undone blindly.
The data is not touched. An invalid marker is removed too: revive is how an
operator clears one. A live table, a purged table and an unknown name are
reported as failed.

Exit status: 0 when every name was revived, 1 when any failed, 2 on usage errors.`,
		Args: requireNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runRevive(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runRevive revives each name and prints one line per name.
func runRevive(ctx context.Context, o reviveOptions, stdout io.Writer) error {
	names, err := o.tableNames("revive", o.Names, true)
	if err != nil {
		return err
	}
	o.Names = names
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	return storeError(ns.URI(), eachName(stdout, o.Quiet, "revive", o.Names, func(name string) (string, error) {
		return "revived: marker removed, the table is live again", ns.Revive(ctx, name)
	}, reviveFailure))
}

func reviveFailure(name string, err error) string {
	switch {
	case errors.Is(err, reaper.ErrNotSoftDeleted):
		// The error says it three ways ("revive", "not soft-deleted", "live
		// already"); once is enough.
		return fmt.Sprintf("not revived: it is live already (no marker %s); nothing to undo", lifecycle.MarkerKey(name))
	case errors.Is(err, reaper.ErrNotFound):
		return "not revived: not found: " + err.Error() + lanceSuffixHint(name)
	case errors.Is(err, reaper.ErrLocked):
		return "not revived: locked (a purge may be running; check 'reaper status'): " + err.Error()
	case errors.Is(err, reaper.ErrConflict):
		return "not revived: " + err.Error()
	}
	return "not revived: " + err.Error()
}
