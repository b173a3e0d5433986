package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// demoSentinel marks a directory `reaper demo` created; it deletes nothing
// in a directory without it.
const demoSentinel = ".reaper-demo"

// demoDB is the database root inside the demo directory.
const demoDB = "db"

// demoOptions are the flags of `reaper demo`.
type demoOptions struct {
	globalOptions
	// Dir holds the demo; "" means ./var/demo.
	Dir string
}

func (o *demoOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", "var/demo", "directory for the demo database (made absolute); a previous demo there is replaced")
}

func newDemoCmd(g *globalOptions, stdout io.Writer) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR]",
		Short: "Seed a demo database and run one purge pass over it",
		Long: `Seed a small demo database root under DIR/db with tables LanceDB wrote
(@lancedb/lancedb 0.39; LanceDB opens them there): live tables,
soft-deleted tables with a 2s TTL, one soft-deleted table not due yet and
one orphan marker. Wait the 2 seconds (due-ness is judged by
the store's clock), then show its status, run one purge pass
(the same code as 'reaper purge'), explain what was reclaimed and what was
kept and why, and show the status again.

DIR gets a .reaper-demo file; a later run deletes only DIR/db, and only
when that file is there. reaper demo refuses a non-empty DIR without it.

Exit status: 0 on success, 1 when the purge pass failed a table, 2 when
DIR cannot be used.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.globalOptions = *g
			if f := cmd.Flag("log-level"); f == nil || !f.Changed {
				o.LogLevel = "warn" // keep the walkthrough readable
			}
			return runDemo(cmd.Context(), o, stdout)
		},
	}
	o.register(cmd.Flags())
	return cmd
}

// demoTable is one name of the demo root.
type demoTable struct {
	name string
	// data: the table's files are in demodata/ (a table LanceDB wrote);
	// without them a drop leaves an orphan marker.
	data bool
	// ttl > 0 drops the table with that TTL.
	ttl   time.Duration
	story string
}

// demoTTL is the TTL of the demo's due tables: a real one is hours or days,
// but a table becomes due only once its marker is a TTL old by the store's
// clock (here the kernel's, which stamps the marker), so the demo drops
// them with a TTL it can wait out.
const demoTTL = 2 * time.Second

var demoTables = []demoTable{
	{name: "customers", data: true, story: "live table: 3 versions, a bitmap index"},
	{name: "orders", data: true, story: "live table: 2 versions, a deletion file"},
	{name: "events.2024", data: true, ttl: demoTTL, story: "dropped with a 2s TTL: 4 versions"},
	{name: "clickstream_raw", data: true, ttl: demoTTL, story: "dropped with a 2s TTL: a btree index"},
	{name: "staging_import", data: true, ttl: 7 * 24 * time.Hour, story: "dropped with a 7d TTL"},
	{name: "old_experiments", ttl: demoTTL, story: "marker left behind after its data was deleted (2s TTL)"},
}

// demoData holds the demo's tables, written by the LanceDB client
// (@lancedb/lancedb 0.39) with scripts/gen-demo-tables.sh: real Lance
// tables, which LanceDB lists and opens from the demo root.
//
//go:embed all:demodata
var demoData embed.FS

// runDemo seeds the demo root, shows it, purges it once and shows it again.
func runDemo(ctx context.Context, o demoOptions, stdout io.Writer) error {
	dir, err := prepareDemoDir(o.Dir)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, demoDB)
	if err := seedDemo(root, o.now()); err != nil {
		return fmt.Errorf("seed demo database %s: %w", root, err)
	}
	ns, _, err := storeOptions{globalOptions: o.globalOptions, Root: root}.open(ctx)
	if err != nil {
		return err
	}
	if err := dropDemo(ctx, ns, root); err != nil {
		return fmt.Errorf("drop the demo tables in %s: %w", root, err)
	}
	p := &demoPrinter{w: stdout, root: root}
	p.intro()
	fmt.Fprintf(stdout, "\nWaiting %s for the demo TTLs to pass by the store's clock...\n", demoTTL)
	if err := waitDemoDue(ctx, ns); err != nil {
		return err
	}

	before, err := ns.List(ctx)
	if err != nil {
		return err
	}
	now, err := ns.StoreNow(ctx)
	if err != nil {
		return err
	}
	p.step(1, "the root before the purge", "reaper status --root "+root)
	if err := renderStatusTable(stdout, before, now, 0); err != nil {
		return err
	}

	p.step(2, "one purge pass: reclaim every soft-deleted table whose TTL has passed", "reaper purge --allow-short-ttl --root "+root)
	rt, err := newRuntime(ctx, storeOptions{globalOptions: o.globalOptions, Root: root}, passFlags{AllowShortTTL: true})
	if err != nil {
		return err
	}
	defer rt.close()
	pass, err := rt.worker.Pass(ctx, nil)
	if err != nil {
		return err
	}
	rep := purgeReportOf(pass, false)
	if err := renderPurgeTable(stdout, rep); err != nil {
		return err
	}

	p.step(3, "what happened, and why", "")
	p.explain(rep, before)

	after, err := ns.List(ctx)
	if err != nil {
		return err
	}
	p.step(4, "the root after the purge", "reaper status --root "+root)
	if now, err = ns.StoreNow(ctx); err != nil {
		return err
	}
	if err := renderStatusTable(stdout, after, now, 0); err != nil {
		return err
	}
	p.outro()
	return rep.err()
}

// prepareDemoDir makes dir absolute and ready: created if missing; if it
// holds a previous demo (its sentinel), only that demo's db/ is removed. A
// non-empty directory without the sentinel is refused: the demo never
// deletes what it did not create.
func prepareDemoDir(dir string) (string, error) {
	if dir == "" {
		dir = "var/demo"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usagef("--dir %q: make it absolute: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", usagef("--dir %s: create it: %w", abs, err)
		}
	case err != nil:
		return "", usagef("--dir %s: %w; pass a directory reaper demo may create or reuse", abs, err)
	case len(entries) > 0:
		info, err := os.Lstat(filepath.Join(abs, demoSentinel))
		if err != nil || !info.Mode().IsRegular() {
			return "", usagef("--dir %s is not empty and has no %s file, so reaper demo did not create it and will not delete anything in it; pass a new or empty directory", abs, demoSentinel)
		}
		if err := os.RemoveAll(filepath.Join(abs, demoDB)); err != nil {
			return "", fmt.Errorf("remove the previous demo database %s: %w", filepath.Join(abs, demoDB), err)
		}
	}
	note := "Created by 'reaper demo'. A later 'reaper demo' run deletes ./" + demoDB + "/ here, and nothing else.\n"
	if err := os.WriteFile(filepath.Join(abs, demoSentinel), []byte(note), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", filepath.Join(abs, demoSentinel), err)
	}
	return abs, nil
}

// seedDemo copies the demo tables under root, their files dated an hour
// ago (before the drops, as a table's files are).
func seedDemo(root string, now time.Time) error {
	for _, t := range demoTables {
		if !t.data {
			continue
		}
		if err := writeDemoTable(root, t.name, now.Add(-time.Hour)); err != nil {
			return err
		}
	}
	return nil
}

// dropDemo drops the demo's dropped tables as 'reaper drop' does, and
// leaves the orphan marker of a table whose data is gone.
func dropDemo(ctx context.Context, ns *reaper.Namespace, root string) error {
	for _, t := range demoTables {
		switch {
		case t.ttl == 0:
		case !t.data:
			if err := writeLocalFile(filepath.Join(root, lifecycle.MarkerKey(t.name)), lifecycle.EncodeMarker(time.Now(), t.ttl), time.Now()); err != nil {
				return err
			}
		default:
			if _, err := ns.Drop(ctx, t.name, t.ttl); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitDemoDue waits until every table dropped with demoTTL is due by the
// store's clock.
func waitDemoDue(ctx context.Context, ns *reaper.Namespace) error {
	for {
		all, err := ns.List(ctx)
		if err != nil {
			return err
		}
		now, err := ns.StoreNow(ctx)
		if err != nil {
			return err
		}
		var wait time.Duration
		for _, s := range all {
			if s.Marker != nil && s.TTL <= demoTTL && !s.Due(now) {
				wait = max(wait, s.PurgeAfter.Sub(now))
			}
		}
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait + 10*time.Millisecond):
		}
	}
}

// writeDemoTable copies demodata/<name>.lance/ to root/<name>.lance/, its
// files dated mtime.
func writeDemoTable(root, name string, mtime time.Time) error {
	dir := path.Join("demodata", lifecycle.TableDir(name))
	return fs.WalkDir(demoData, strings.TrimSuffix(dir, "/"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := demoData.ReadFile(p)
		if err != nil {
			return err
		}
		return writeLocalFile(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, "demodata/"))), body, mtime)
	})
}

func writeLocalFile(path string, body []byte, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	return os.Chtimes(path, mtime, mtime)
}

// demoPrinter writes the walkthrough around the status and purge output.
type demoPrinter struct {
	w    io.Writer
	root string
}

func (p *demoPrinter) intro() {
	fmt.Fprintf(p.w, `reaper demo: seeded a LanceDB database root at
  %s

Its tables were written by LanceDB (@lancedb/lancedb 0.39): LanceDB lists
and opens them from this root. Each is a directory <name>.lance/ (manifests
in _versions/, data in data/, plus _transactions/, _deletions/, _indices/).
reaper drops a table by writing a sibling marker <name>.deleted holding
{"deleted_at_ms":...,"ttl_ms":...}, as Lance's coming soft-delete will; the
data stays until the TTL passes by the store's clock. (The demo's TTLs are
seconds so it can wait them out; a purge refuses TTLs under safety.min_ttl,
1h, unless --allow-short-ttl.) Today's LanceDB does not read markers: it
still lists and opens a dropped table until reaper purges it.

The demo root holds:
`, p.root)
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, t := range demoTables {
		fmt.Fprintf(tw, "  %s\t%s\n", t.name, t.story)
	}
	tw.Flush()
}

func (p *demoPrinter) step(n int, title, command string) {
	fmt.Fprintf(p.w, "\n== Step %d: %s\n", n, title)
	if command != "" {
		fmt.Fprintf(p.w, "   $ %s\n", command)
	}
	fmt.Fprintln(p.w)
}

// explain turns the report into sentences a newcomer can follow.
func (p *demoPrinter) explain(rep *purgeReport, before []reaper.TableStatus) {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	for _, r := range rep.Purged {
		if r.Objects == 0 {
			fmt.Fprintf(tw, "  removed\t%s\tits data was already gone, so only the stale marker was deleted\n", displayName(r.Name))
			continue
		}
		fmt.Fprintf(tw, "  reclaimed\t%s\tTTL passed: %d objects (%s) deleted, manifests first and the marker last\n", displayName(r.Name), r.Objects, humanBytes(r.Bytes))
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(tw, "  kept\t%s\t%s; a later pass purges it\n", displayName(s.Name), safeText(s.Reason))
	}
	for _, f := range rep.Failed {
		fmt.Fprintf(tw, "  FAILED\t%s\t%s\n", displayName(f.Name), safeText(f.Error))
	}
	var live []string
	for _, s := range before {
		if s.State == reaper.StateExists {
			live = append(live, s.Name)
		}
	}
	if len(live) > 0 {
		fmt.Fprintf(tw, "  kept\t%s\tlive: a table without a marker is never purged\n", strings.Join(live, ", "))
	}
	tw.Flush()
}

func (p *demoPrinter) outro() {
	fmt.Fprintf(p.w, `
Try it yourself on this root (make build puts the binary in ./bin):
  ./bin/reaper drop   --root %[1]s --ttl 1m orders      # soft-delete; 1m is below the 1h TTL floor (safety.min_ttl)
  ./bin/reaper status --root %[1]s                      # orders: due in 1m, below the floor
  ./bin/reaper purge  --root %[1]s --dry-run            # what a pass would reclaim
  ./bin/reaper purge  --root %[1]s --allow-short-ttl    # a minute later: reclaims orders
  ./bin/reaper revive --root %[1]s orders               # instead of the purge: undo the drop

LanceDB opens the tables left here, e.g. in Node:
  (await (await require("@lancedb/lancedb").connect("%[1]s")).tableNames())
`, p.root)
}
