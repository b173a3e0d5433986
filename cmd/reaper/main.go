// Command reaper drops, revives, inspects and purges the tables of a Lance /
// LanceDB database root with Lance's soft-delete protocol. main only wires
// signals, dispatches to the subcommands and maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lance-reaper/reaper"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// Exit codes, stated in the root command's help.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitRefused: a purge pass failed nothing but a safety rail refused a
	// root (blast radius, pause), so due tables were kept.
	exitRefused = 3
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs one command line and returns its exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newRootCmd(stdout, stderr)
	cmd.SetArgs(args)
	err := checkCommand(cmd, args)
	if err == nil {
		err = cmd.ExecuteContext(ctx)
	}
	if err != nil {
		// Several problems (a configuration's, joined) go on lines of
		// their own, each escaped, never one line of "\n"s.
		for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
			fmt.Fprintf(stderr, "reaper: %s\n", safeText(line))
		}
	}
	return exitCode(err)
}

// exitCode maps an error to the documented exit status: 2 for usage and
// configuration errors, 3 for a purge refused by a safety rail, 1 for
// anything else (a table failed, a root could not be read, the run was
// interrupted, the metrics could not be exported).
func exitCode(err error) int {
	var ue *usageError
	var re *refusedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.Is(err, reaper.ErrInvalidName):
		return exitUsage
	case errors.As(err, &re):
		return exitRefused
	default:
		return exitFailed
	}
}

// signalContext returns a context cancelled on the second SIGINT/SIGTERM;
// the first only asks long runs to stop between tables (see draining).
func signalContext() (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, abort := context.WithCancel(context.Background())
	drain := make(chan struct{})
	ctx = withDrain(ctx, drain)
	go func() {
		select {
		case <-sigs:
			close(drain)
		case <-ctx.Done():
			return
		}
		select {
		case <-sigs:
			abort()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		abort()
	}
}
