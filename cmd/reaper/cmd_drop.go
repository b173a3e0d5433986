package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// dropOptions are the flags and arguments of `reaper drop`.
type dropOptions struct {
	storeOptions
	// TTL is how long the data is kept; zero means --default-ttl.
	TTL   time.Duration
	Names []string
}

func (o *dropOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
	fs.Var(newDurationValue(&o.TTL, 0), "ttl",
		fmt.Sprintf("how long the data is kept before purge may reclaim it, e.g. 7d or 36h (default: --default-ttl, %s)", formatDuration(reaper.DefaultTTL)))
}

func newDropCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o dropOptions
	cmd := &cobra.Command{
		Use:   "drop --root URI [--ttl DURATION] NAME...",
		Short: "Soft-delete tables: write <name>.deleted markers, keep the data",
		Long: `Soft-delete each named table: write <root>/<name>.deleted with deleted_at
and the TTL, as Lance's drop_table does. The data stays until a purge after
the TTL; 'reaper revive' undoes the drop until then. A table that is already
soft-deleted keeps its marker unchanged (its clock is not restarted) and is
reported as failed, as is a name with no data. A table in a LanceDB
namespace (its object id, or --namespace) is refused: Lance's soft delete is
V1-only, so drop it with LanceDB's dropTable.

Exit status: 0 when every name was dropped, 1 when any failed, 2 on usage errors.`,
		Args: requireNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runDrop(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runDrop drops each name and prints one line per name.
func runDrop(ctx context.Context, o dropOptions, stdout io.Writer) error {
	names, err := o.tableNames("drop", o.Names, true)
	if err != nil {
		return err
	}
	o.Names = names
	floor, err := o.ttlFloor()
	if err != nil {
		return err
	}
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	return storeError(ns.URI(), eachName(stdout, o.Quiet, "drop", o.Names, func(name string) (string, error) {
		m, err := ns.Drop(ctx, name, o.TTL)
		if err != nil {
			return "", err
		}
		if ttl := m.TTL(0); ttl < floor {
			fmt.Fprintf(o.stderr(), "reaper: warning: %s: %s\n", displayName(name), shortTTLWarning(ttl, floor))
		}
		return fmt.Sprintf("dropped (soft-deleted): ttl %s, purgeable after %s; undo with '%s'",
			formatDuration(m.TTL(0)), formatTime(m.PurgeAfter(0)), reviveCommand(ns.URI(), o.StorageOptions, name)), nil
	}, dropFailure))
}

// reviveCommand is the command that undoes a drop: the root and every
// storage option the drop was given (an s3:// root on another endpoint
// needs them to be reached at all), a secret's value written "..." for the
// user to give again.
func reviveCommand(uri string, storageOptions []string, name string) string {
	words := []string{"reaper", "revive", "--root", shellWord(uri)}
	reg := all.Default()
	for _, kv := range storageOptions {
		k, v, _ := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); reg.IsSecretOption(k) {
			v = "..."
		}
		words = append(words, "--storage-option", shellWord(k+"="+v))
	}
	return strings.Join(append(words, shellWord(name)), " ")
}

// dropFailure explains a failed drop in operator terms.
func dropFailure(name string, err error) string {
	switch {
	case errors.Is(err, reaper.ErrAlreadyDeleted):
		return "not dropped: already soft-deleted; its marker was left unchanged (see 'reaper status'): " + err.Error()
	case errors.Is(err, reaper.ErrNotFound):
		return "not dropped: not found: " + err.Error() + lanceSuffixHint(name)
	}
	return "not dropped: " + err.Error()
}

// lanceSuffixHint helps with the common mistake of passing "x.lance".
func lanceSuffixHint(name string) string {
	if base, ok := strings.CutSuffix(name, lifecycle.TableSuffix); ok && base != "" {
		return fmt.Sprintf(" (pass table names without the .lance suffix: %q)", base)
	}
	return ""
}
