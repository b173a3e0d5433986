package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/logctx"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/stack"
)

// rootLong is `reaper --help`; its part about roots and storage options
// comes from the backend registry (storehelp.go).
func rootLong() string {
	return rootIntro + "\n\n" + storesHelp(all.Default()) + "\n\n" + rootRest
}

const rootIntro = `reaper drops, revives, inspects and purges the tables of a Lance / LanceDB
database root with Lance's soft-delete protocol: drop writes <root>/<name>.deleted
and keeps the data; purge reclaims <root>/<name>.lance/ once the marker's TTL
has passed, under a lease that holds across processes and machines.`

const rootRest = `Durations (--ttl, --default-ttl, --skew-allowance) are Go durations (90m,
36h) or days (7d, 1.5d, 1d12h), and must be positive.

EXIT STATUS
  0  success
  1  at least one table failed (each failure is printed), the root could not
     be read, or the run was interrupted
  2  usage or configuration error: bad flag, duration or table name, bad
     --root URI, unknown or malformed --storage-option, or a root the
     settings cannot reach: a missing directory or bucket, no or rejected
     credentials, the wrong region, an unreachable endpoint, access denied
     (one line naming the root and what to set)`

// globalOptions are the flags every command shares.
type globalOptions struct {
	// DefaultTTL for drops without --ttl and markers without ttl_ms; zero
	// means reaper.DefaultTTL.
	DefaultTTL time.Duration
	// SkewAllowance for future-dated markers and the identity fence; zero
	// means reaper.DefaultSkewAllowance.
	SkewAllowance time.Duration
	// LogFormat is text or json; LogLevel debug, info, warn or error.
	LogFormat string
	LogLevel  string
	// Quiet prints only failures: no success lines, logs at error level
	// unless --log-level says otherwise.
	Quiet bool
	// Now is this host's clock for logs and reports (time.Now when nil);
	// tests set it. It decides nothing: due-ness and lease takeovers read
	// the store's clock.
	Now func() time.Time
	// Stderr receives logs (os.Stderr when nil).
	Stderr io.Writer
	// wrapStore, when set, wraps every store a command opens (tests move
	// the store's clock with it).
	wrapStore func(objstore.Store) objstore.Store
	// wrapLedger, when set, wraps the audit ledger's store (tests inject
	// its faults with it).
	wrapLedger func(objstore.Store) objstore.Store
	// lookupEnv reads REAPER_* variables for the commands without --config
	// (os.LookupEnv when nil); tests set it.
	lookupEnv func(string) (string, bool)
}

// storeOptions are the flags of every command that opens a root.
type storeOptions struct {
	globalOptions
	Root           string
	StorageOptions []string
	// LeaseTTL is the length of the table leases the command takes; zero
	// means reaper.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Namespace is --namespace (namespace_flag.go).
	Namespace string
}

func (g globalOptions) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// stderr is where logs and warnings go.
func (g globalOptions) stderr() io.Writer {
	if g.Stderr != nil {
		return g.Stderr
	}
	return os.Stderr
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globalOptions{Stderr: stderr}
	cmd := &cobra.Command{
		Use:           "reaper",
		Short:         "Soft-delete, revive and purge tables of Lance / LanceDB databases",
		Long:          rootLong(),
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		// "prune" is three edits from "purge".
		SuggestionsMinimumDistance: 3,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownCommand(cmd, args[0])
		},
	}
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error { return g.applyClockOffset(os.LookupEnv) }
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if !c.HasParent() {
			return usagef("%w; run 'reaper --help' for the commands and flags", err)
		}
		return usagef("%s: %w; run '%s --help' for the flags", c.Name(), err, c.CommandPath())
	})
	g.register(cmd.PersistentFlags())
	cmd.AddCommand(
		newDropCmd(g, stdout),
		newReviveCmd(g, stdout),
		newStatusCmd(g, stdout),
		newRetainCmd(g, stdout),
		newPurgeCmd(g, stdout),
		newRunCmd(g, stdout),
		newHoldCmd(g, stdout),
		newReleaseCmd(g, stdout),
		newAuditCmd(g, stdout),
		newDemoCmd(g, stdout),
		newVersionCmd(stdout),
	)
	return cmd
}

// unknownCommand is the error for a first argument that names no command,
// with the closest command when there is one.
func unknownCommand(root *cobra.Command, name string) error {
	hint := "run 'reaper --help' for the list of commands"
	if s := root.SuggestionsFor(name); len(s) > 0 {
		hint = fmt.Sprintf("did you mean %q? %s", s[0], hint)
	}
	return usagef("unknown command %q: %s", name, hint)
}

// checkCommand catches an unknown command before cobra parses the flags
// that follow it against the root command ("reaper prune --root /x" would
// say "unknown flag: --root" and never suggest purge).
func checkCommand(root *cobra.Command, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil
	}
	switch args[0] {
	case "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return nil
	}
	for _, c := range root.Commands() {
		if c.Name() == args[0] || c.HasAlias(args[0]) {
			return nil
		}
	}
	return unknownCommand(root, args[0])
}

// clockOffsetEnv shifts this process's wall clock, as if its host's clock
// were off by that much. The chaos suite runs replicas with it; since no
// decision to delete or to take a lease over reads the wall clock, it
// changes timestamps in logs, reports and the ledger, and nothing else.
const clockOffsetEnv = "REAPER_CLOCK_OFFSET"

func (g *globalOptions) applyClockOffset(lookup func(string) (string, bool)) error {
	v, ok := lookup(clockOffsetEnv)
	if !ok || v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return usagef("%s=%q: want a Go duration such as -90s or 5m", clockOffsetEnv, v)
	}
	now := g.now
	g.Now = func() time.Time { return now().Add(d) }
	return nil
}

func (g *globalOptions) register(fs *pflag.FlagSet) {
	fs.Var(newDurationValue(&g.DefaultTTL, reaper.DefaultTTL), "default-ttl",
		"TTL for drops without --ttl and for markers without ttl_ms")
	fs.Var(newDurationValue(&g.SkewAllowance, reaper.DefaultSkewAllowance), "skew-allowance",
		"how far a marker may be dated in the future, how long after deleted_at table files may change, and how long past a lease's TTL (by the store's clock) a contender waits before taking it over")
	fs.StringVar(&g.LogFormat, "log-format", "", "log format on stderr: text or json (default text; purge and run with --config: log.format, json)")
	fs.StringVar(&g.LogLevel, "log-level", "", "log level: debug, info, warn or error (default: warn for drop, revive, status, hold and release, whose result line says it all; info for purge and run, or log.level; error with -q)")
	fs.BoolVarP(&g.Quiet, "quiet", "q", false, "print only what failed: no success lines, no logs below error (for scripts; -o json is printed whole)")
}

// registerStore adds --root and --storage-option to a command that opens a
// root; g is copied in when the command runs.
func (o *storeOptions) registerStore(fs *pflag.FlagSet) {
	fs.StringVar(&o.Root, "root", "",
		"database root (required unless REAPER_ROOTS names one): "+rootUsage()+"; a relative path is made absolute")
	fs.StringArrayVar(&o.StorageOptions, "storage-option", nil, storageOptionUsage("roots"))
}

// logger builds the stderr logger from --log-format and --log-level. Lines
// logged with a context carry its attributes (the pass, the table: see
// internal/logctx).
func (g globalOptions) logger() (*slog.Logger, error) {
	var level slog.Level
	switch {
	case g.LogLevel != "":
	case g.Quiet:
		g.LogLevel = "error"
	default:
		g.LogLevel = "info"
	}
	if err := level.UnmarshalText([]byte(g.LogLevel)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", g.LogLevel)
	}
	w := g.stderr()
	ho := &slog.HandlerOptions{Level: level}
	switch g.LogFormat {
	case "text", "":
		return slog.New(logctx.Handler(slog.NewTextHandler(w, ho))), nil
	case "json":
		return slog.New(logctx.Handler(slog.NewJSONHandler(w, ho))), nil
	}
	return nil, usagef("--log-format %q: want text or json", g.LogFormat)
}

// resolveRoot makes a relative local path absolute; URIs and absolute paths
// pass through for reaper.Open to check.
func resolveRoot(root string) (string, error) {
	if root == "" {
		return "", usagef("--root is required: pass the database root, e.g. --root /data/lancedb, --root ./lancedb or --root s3://bucket/prefix (or set REAPER_ROOTS)")
	}
	if err := config.CheckNoCredentials("--root", root); err != nil {
		return "", asUsage(err)
	}
	if strings.Contains(root, "://") || filepath.IsAbs(root) {
		return root, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", usagef("--root %q: make it absolute: %w", root, err)
	}
	return abs, nil
}

// optionName matches what could be a storage option name, safe to echo.
var optionName = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// parseStorageOptions turns repeated key=value flags into a map.
func parseStorageOptions(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok && optionName.MatchString(kv):
			return nil, usagef("--storage-option %q: missing '='; write key=value, e.g. --storage-option aws_region=us-east-1", kv)
		case !ok:
			// The argument may be a mistyped secret: do not echo it.
			return nil, usagef("--storage-option number %d has no '='; write key=value, e.g. --storage-option aws_region=us-east-1", i+1)
		case k == "":
			return nil, usagef("--storage-option %q: empty key; write key=value, e.g. --storage-option aws_region=us-east-1", kv)
		}
		if _, dup := m[k]; dup {
			return nil, usagef("--storage-option %s given twice; pass each key once", k)
		}
		m[k] = v
	}
	return m, nil
}

// open resolves and opens the root. Every error here is a configuration
// error (exit 2): Open checks the URI and the storage options but does not
// touch the root.
func (o storeOptions) open(ctx context.Context) (*reaper.Namespace, *slog.Logger, error) {
	if o.LogLevel == "" && !o.Quiet {
		// Each name gets its result line on stdout; an INFO line on stderr
		// beside it says the same again.
		o.LogLevel = "warn"
	}
	log, err := o.logger()
	if err != nil {
		return nil, nil, err
	}
	given, err := o.rootOrEnv()
	if err != nil {
		return nil, nil, err
	}
	root, err := resolveRoot(given)
	if err != nil {
		return nil, nil, err
	}
	if root != given {
		log.Debug("relative root made absolute", "root", given, "absolute", root)
	}
	so, err := parseStorageOptions(o.StorageOptions)
	if err != nil {
		return nil, nil, err
	}
	ropts := reaper.Options{
		StorageOptions: so,
		DefaultTTL:     o.DefaultTTL,
		SkewAllowance:  o.SkewAllowance,
		LeaseTTL:       o.LeaseTTL,
		Logger:         log,
		Now:            o.Now,
	}
	ns, err := reaper.Open(stack.WithWrapBackend(ctx, o.wrapStore), root, ropts)
	if err != nil {
		if strings.Contains(err.Error(), root) {
			return nil, nil, asUsage(err)
		}
		return nil, nil, usagef("--root %s: %w", root, err)
	}
	return ns, log, nil
}

// rootOrEnv is --root, or else the one root REAPER_ROOTS names, as purge
// and run read it.
func (o storeOptions) rootOrEnv() (string, error) {
	if o.Root != "" {
		return o.Root, nil
	}
	v, ok := o.lookup(config.EnvRoots)
	if !ok {
		return "", nil
	}
	var uris []string
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			uris = append(uris, u)
		}
	}
	if len(uris) > 1 {
		return "", usagef("%s names %d roots and this command takes one: pass --root", config.EnvRoots, len(uris))
	}
	if len(uris) == 1 {
		return uris[0], nil
	}
	return "", nil
}

// validateNames checks table names before anything is changed, so a typo in
// the third name does not leave the first two half-done.
func validateNames(names []string) error {
	for _, n := range names {
		if err := reaper.ValidateName(n); err != nil {
			return asUsage(err)
		}
	}
	return nil
}

// requireNames is a cobra.PositionalArgs for commands that need at least one
// table name.
func requireNames(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usagef("%s: name at least one table, e.g. 'reaper %s --root /data/lancedb my_table'", cmd.Name(), cmd.Name())
	}
	return nil
}

// durationValue is a positive duration flag that also accepts a day suffix:
// 7d, 1d12h, 36h, 90m.
type durationValue struct {
	d   *time.Duration
	def time.Duration
}

func newDurationValue(d *time.Duration, def time.Duration) *durationValue {
	return &durationValue{d: d, def: def}
}

func (v *durationValue) String() string {
	switch {
	case v == nil || v.d == nil:
		return ""
	case *v.d != 0:
		return formatDuration(*v.d)
	case v.def != 0:
		return formatDuration(v.def)
	}
	return ""
}

func (v *durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v *durationValue) Type() string { return "duration" }

// parseDuration is config.ParseDuration, the one duration grammar of flags,
// YAML, env and --set ("90s", "36h", "7d", "1d12h", "1.5d"), restricted to
// positive lengths: every duration flag is one.
func parseDuration(s string) (time.Duration, error) {
	notPositive := fmt.Errorf("duration %q is not positive; write e.g. \"90s\", \"30m\", \"7d\" or \"1d12h\"", s)
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return 0, notPositive
	}
	d, err := config.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, notPositive
	}
	return d, nil
}
