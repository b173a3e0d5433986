package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
)

// holdOptions are the flags and arguments of `reaper hold`.
type holdOptions struct {
	storeOptions
	Reason string
	Names  []string
}

func (o *holdOptions) register(fs *pflag.FlagSet) {
	o.registerStore(fs)
	o.registerNamespace(fs)
	fs.StringVar(&o.Reason, "reason", "", "why the tables are held (required), for example a case or ticket number")
}

func newHoldCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o holdOptions
	cmd := &cobra.Command{
		Use:   "hold --root URI --reason TEXT NAME...",
		Short: "Place a legal hold: the tables are neither purged nor cleaned of old versions until released",
		Long: `Place a legal hold on each named table by writing <name>.reaper-hold
beside it. While the hold exists no purge deletes the table, whatever its
TTL, and version retention removes none of its old versions; status shows
it, and purge and retain report it as held. An existing hold is kept as it
is. Lift it with 'reaper release'. A purge or a retention run re-reads the
hold before each batch of deletes: a hold placed while one runs stops it
before its next batch (the command says so), and what it deleted is gone.

Exit status: 0 when every name was held, 1 when any failed, 2 on usage errors.`,
		Args: requireNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runHold(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

func runHold(ctx context.Context, o holdOptions, stdout io.Writer) error {
	if o.Reason == "" {
		return usagef("hold: --reason is required: say why the tables are held (a case or ticket number)")
	}
	names, err := o.tableNames("hold", o.Names, false)
	if err != nil {
		return err
	}
	o.Names = names
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	return storeError(ns.URI(), eachName(stdout, o.Quiet, "hold", o.Names, func(name string) (string, error) {
		if _, err := ns.Hold(ctx, name, o.Reason); err != nil {
			return "", err
		}
		return holdMessage(ctx, ns, name, o.Reason), nil
	}, func(name string, err error) string {
		return "not held: " + err.Error() + notFoundHint(name, err)
	}))
}

// releaseOptions are the flags and arguments of `reaper release`.
type releaseOptions struct {
	storeOptions
	Names []string
}

func newReleaseCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o releaseOptions
	cmd := &cobra.Command{
		Use:   "release --root URI NAME...",
		Short: "Lift legal holds placed with 'reaper hold'",
		Long: `Remove <name>.reaper-hold for each named table. A soft-deleted table whose
TTL has passed becomes purgeable again at the next pass.

Exit status: 0 when every hold was lifted, 1 when any failed, 2 on usage errors.`,
		Args: requireNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions, o.Names = *g, args
			return runRelease(cmd.Context(), o, stdout)
		},
	}
	o.registerStore(cmd.Flags())
	o.registerNamespace(cmd.Flags())
	return cmd
}

func runRelease(ctx context.Context, o releaseOptions, stdout io.Writer) error {
	names, err := o.tableNames("release", o.Names, false)
	if err != nil {
		return err
	}
	o.Names = names
	ns, _, err := o.open(ctx)
	if err != nil {
		return err
	}
	return storeError(ns.URI(), eachName(stdout, o.Quiet, "release", o.Names, func(name string) (string, error) {
		return "hold released", ns.Release(ctx, name)
	}, releaseFailure))
}

// releaseFailure explains a failed release; a missing hold is the usual
// case and is not a missing table.
func releaseFailure(name string, err error) string {
	if errors.Is(err, reaper.ErrNotFound) {
		return "not released: it has no legal hold; nothing to release" + lanceSuffixHint(name)
	}
	return "not released: " + err.Error()
}

// holdMessage says what the hold means now, truthfully: a purge already
// deleting the table stops before its next batch (it re-reads the hold
// before each one), but what it deleted is gone.
func holdMessage(ctx context.Context, ns *reaper.Namespace, name, reason string) string {
	msg := fmt.Sprintf("held (%s): neither a purge nor version retention deletes anything more of it until 'reaper release'", reason)
	st, err := ns.Status(ctx, name)
	if err != nil || len(st) != 1 {
		return msg
	}
	switch st[0].State {
	case reaper.StatePurging:
		return msg + "; a purge or a retention run holds its lease now: it stops before its next batch of deletes, and a batch already sent still lands"
	case reaper.StatePartiallyPurged, reaper.StateStuck:
		return msg + "; a purge already deleted part of it (partially purged): what is left is kept"
	}
	return msg
}

func notFoundHint(name string, err error) string {
	if errors.Is(err, reaper.ErrNotFound) {
		return lanceSuffixHint(name)
	}
	return ""
}
