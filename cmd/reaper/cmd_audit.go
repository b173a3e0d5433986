package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/stack"
)

// defaultAuditSince is how far back `reaper audit` looks without --since.
const defaultAuditSince = 24 * time.Hour

// auditOptions are the flags of `reaper audit`. Location and StorageOptions
// may be filled from the config file instead of flags.
type auditOptions struct {
	globalOptions
	// Location is the ledger's URI, in a form of all.Default() (rootUsage);
	// a relative path is made absolute.
	Location string
	// StorageOptions are key=value pairs for a location that takes them.
	StorageOptions []string
	// Since is how far back to look; zero means defaultAuditSince.
	Since time.Duration
	// Output is table or json.
	Output string
	// ConfigPath supplies audit.location and its storage options when
	// --location is not given.
	ConfigPath string
	// Actions, Tables and Roots keep only the rows with one of them (each
	// filter empty: every row).
	Actions, Tables, Roots []string
}

func (o *auditOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigPath, "config", "", "take the location from audit.location of this configuration file")
	fs.StringVar(&o.Location, "location", "",
		"ledger location (required): "+rootUsage()+", outside every table directory")
	fs.StringArrayVar(&o.StorageOptions, "storage-option", nil, storageOptionUsage("locations"))
	fs.Var(newDurationValue(&o.Since, defaultAuditSince), "since",
		"show rows of tables finished within this long before now, e.g. 24h, 7d, 1d12h")
	fs.StringVarP(&o.Output, "output", "o", formatTable, "output format: table or json")
	fs.StringSliceVar(&o.Actions, "action", nil, "show only rows of these actions ("+joinActions()+"), repeatable or comma-separated")
	fs.StringArrayVar(&o.Tables, "table", nil, "show only rows of this table, repeatable")
	fs.StringArrayVar(&o.Roots, "root", nil, "show only rows of this root ("+rootUsage()+", as the rows name it; a local path also matches its file:// URI), repeatable")
}

func newAuditCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	o := auditOptions{Output: formatTable}
	cmd := &cobra.Command{
		Use:   "audit (--location URI | --config FILE) [--since 24h] [--action A] [--table NAME] [--root URI] [-o table|json]",
		Short: "Show what purge passes did, from the audit ledger",
		Long: `Read the audit ledger (one Parquet file per purge pass under passes/ at
--location, and the journals under journal/) and print one row per table a
pass looked at and finished within --since (default 24h), oldest first:
the action (purged, skipped, dry_run, failed, conflict, held, refused, cleaned),
the objects and bytes the pass removed, and the reason or error. It changes
nothing. --action, --table and --root keep the rows of the actions, tables
and roots named (each repeatable; rows must match every filter given), e.g.
--action failed, or --action cleaned --root s3://bucket/db for what version
retention did in one root. A row with no table is a root's: it could not
be read, or it counts the live tables version retention found nothing to
do in (reason nothing_to_do), which have no row each.

Rows a later pass folded from the journal of a pass killed before it wrote
its file are marked [recovered by <pass id>]; rows still in a journal
(a pass running, or killed and not folded yet) are marked [pending]. A
purge whose pass died before recording its outcome reads failed,
unfinished: the table may be untouched, or partly or fully purged; once
folded by a pass that found the table's marker and directory both gone,
it reads purged, due: recovered. A row recorded twice (in a pass's file
and in its folded journal) is shown once.

JSON (-o json) is an array of objects whose keys are the Parquet columns:
pass_id, root, table, action, reason, deleted_at, ttl_ms, purge_after,
objects, bytes, started, finished, error, reaper_version, host and
recovered_by and location (a table in a LanceDB namespace's directory; table
is then its object id), plus pending (true for a row read from a journal);
timestamps are RFC 3339 strings, missing values are null.

Exit status: 0 on success (also when nothing was recorded), 1 when the
ledger cannot be read or holds a file that does not decode, 2 on usage
errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.globalOptions = *g
			return runAudit(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// runAudit prints the ledger rows finished within o.Since.
func runAudit(ctx context.Context, o auditOptions, stdout io.Writer) error {
	if err := checkFormat(o.Output); err != nil {
		return err
	}
	var so map[string]string
	if o.Location == "" && o.ConfigPath != "" {
		cfg, err := config.LoadEnviron(o.ConfigPath, os.Environ())
		if err != nil {
			return asUsage(err)
		}
		if cfg.Audit.Location == "" {
			return usagef("--config %s: audit.location is not set; set it or pass --location", o.ConfigPath)
		}
		o.Location, so = cfg.Audit.Location, cfg.Audit.StorageOptions
	}
	loc, err := resolveLocation(o.Location)
	if err != nil {
		return err
	}
	if so == nil {
		if so, err = parseStorageOptions(o.StorageOptions); err != nil {
			return err
		}
	}
	log, err := o.logger()
	if err != nil {
		return err
	}
	store, err := stack.Open(ctx, loc, so, stack.Options{Logger: log})
	if err != nil {
		return usagef("--location %s: %w", loc, err)
	}
	since := o.Since
	if since <= 0 {
		since = defaultAuditSince
	}
	from := o.now().Add(-since)
	keep, err := o.filter()
	if err != nil {
		return err
	}
	rows, err := ledger.Read(ctx, store, from)
	if err != nil {
		return err
	}
	rows = slices.DeleteFunc(rows, func(r ledger.Row) bool { return !keep(r) })
	if o.Output == formatJSON {
		return renderAuditJSON(stdout, rows)
	}
	if len(rows) == 0 && len(o.Actions)+len(o.Tables)+len(o.Roots) > 0 {
		_, err := fmt.Fprintf(stdout, "no rows in the ledger since %s match --action, --table and --root\n", formatTime(from))
		return err
	}
	return renderAuditTable(stdout, rows, from)
}

// joinActions lists the ledger's actions, for --action's help and errors.
func joinActions() string {
	var out []string
	for _, a := range outcome.Actions() {
		out = append(out, string(a))
	}
	return strings.Join(out, ", ")
}

// filter is what --action, --table and --root keep: a row matching one
// value of each filter given. An unknown action is a usage error; a root
// given as a local path matches the file:// URI the ledger records.
func (o auditOptions) filter() (func(ledger.Row) bool, error) {
	actions := map[string]bool{}
	for _, a := range o.Actions {
		a = strings.TrimSpace(a)
		if !slices.Contains(outcome.Actions(), outcome.Action(a)) {
			return nil, usagef("audit: --action %q: want one of %s", a, joinActions())
		}
		actions[a] = true
	}
	tables := map[string]bool{}
	for _, t := range o.Tables {
		tables[t] = true
	}
	roots := map[string]bool{}
	for _, r := range o.Roots {
		roots[r] = true
		if !strings.Contains(r, "://") {
			if abs, err := filepath.Abs(r); err == nil {
				roots[abs], roots["file://"+filepath.ToSlash(abs)] = true, true
			}
		}
	}
	return func(r ledger.Row) bool {
		return (len(actions) == 0 || actions[r.Action]) && (len(tables) == 0 || tables[r.Table]) &&
			(len(roots) == 0 || roots[r.Root])
	}, nil
}

// resolveLocation makes a relative local path absolute and refuses a
// location inside a table directory.
func resolveLocation(loc string) (string, error) {
	if loc == "" {
		return "", usagef("--location is required: pass the audit ledger location, e.g. --location /var/lib/reaper/ledger or --location s3://bucket/reaper-ledger")
	}
	if !strings.Contains(loc, "://") && !filepath.IsAbs(loc) {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return "", usagef("--location %q: make it absolute: %w", loc, err)
		}
		loc = abs
	}
	if err := ledger.CheckLocation(loc); err != nil {
		return "", usagef("--location: %w", err)
	}
	return loc, nil
}

// auditJSON is one element of `reaper audit -o json`; keys are the Parquet
// column names, pointer fields are null when the column is.
type auditJSON struct {
	PassID        string  `json:"pass_id"`
	Root          string  `json:"root"`
	Table         string  `json:"table"`
	Action        string  `json:"action"`
	Reason        *string `json:"reason"`
	DeletedAt     *string `json:"deleted_at"`
	TTLMs         *int64  `json:"ttl_ms"`
	PurgeAfter    *string `json:"purge_after"`
	Objects       int64   `json:"objects"`
	Bytes         int64   `json:"bytes"`
	Started       string  `json:"started"`
	Finished      string  `json:"finished"`
	Error         *string `json:"error"`
	ReaperVersion string  `json:"reaper_version"`
	Host          string  `json:"host"`
	RecoveredBy   *string `json:"recovered_by"`
	Pending       bool    `json:"pending"`
	// Location is a table in a LanceDB namespace's directory (table is its
	// object id); null for a root table.
	Location *string `json:"location"`
}

// auditTimeLayout is RFC 3339 with milliseconds, the ledger's precision.
const auditTimeLayout = "2006-01-02T15:04:05.000Z07:00"

func toAuditJSON(r ledger.Row) auditJSON {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	ts := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		return ptr(t.UTC().Format(auditTimeLayout))
	}
	out := auditJSON{
		PassID: r.PassID, Root: r.Root, Table: r.Table, Action: r.Action,
		Reason: str(r.Reason), DeletedAt: ts(r.DeletedAt), PurgeAfter: ts(r.PurgeAfter),
		Objects: r.Objects, Bytes: r.Bytes,
		Started: r.Started.UTC().Format(auditTimeLayout), Finished: r.Finished.UTC().Format(auditTimeLayout),
		Error: str(r.Error), ReaperVersion: r.Version, Host: r.Host,
		RecoveredBy: str(r.RecoveredBy), Pending: r.Pending, Location: str(r.Location),
	}
	if r.TTL != nil {
		out.TTLMs = ptr(r.TTL.Milliseconds())
	}
	return out
}

func renderAuditJSON(w io.Writer, rows []ledger.Row) error {
	out := make([]auditJSON, len(rows))
	for i, r := range rows {
		out[i] = toAuditJSON(r)
	}
	return writeJSON(w, out)
}

// renderAuditTable prints aligned columns TIME ROOT TABLE ACTION OBJECTS
// BYTES REASON/ERROR; TIME is when work on the table started.
func renderAuditTable(w io.Writer, rows []ledger.Row, since time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "no tables recorded in the ledger since %s\n", formatTime(since))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tROOT\tTABLE\tACTION\tOBJECTS\tBYTES\tREASON/ERROR")
	for _, r := range rows {
		note := "-" // a trailing empty cell would leave padding at the line end
		switch {
		case r.Error != "" && r.Reason != "":
			note = r.Reason + ": " + r.Error
		case r.Error != "":
			note = r.Error
		case r.Reason != "":
			note = r.Reason
		}
		switch {
		case r.Pending:
			note = "[pending] " + note
		case r.RecoveredBy != "":
			note = "[recovered by " + r.RecoveredBy + "] " + note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", formatTime(r.Started), safeText(r.Root), displayName(r.Table), safeText(r.Action),
			r.Objects, humanBytes(r.Bytes), safeText(oneLine(note)))
	}
	return tw.Flush()
}

// oneLine keeps a multi-line error on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
