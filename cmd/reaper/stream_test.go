package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/worker"
)

// The purge report and the status are written as they stream (columns.go)
// instead of through json.Encoder and text/tabwriter, which hold the whole
// output. These tests hold them to the bytes those wrote, with the
// renderers as they were (tabwriterPurgeTable, tabwriterStatusTable).

// oddNames are table names that test alignment and escaping: wide and
// multibyte runes, HTML-escaped bytes, a control character, prefixes.
var oddNames = []string{"a", "a-b", "a.b", "ünïcödé", "表格", "<b>&amp;", "tab\tname", "a\nb", "z" + strings.Repeat("x", 40)}

// passReport runs a pass (a dry run) over one or two memory roots of
// random tables, due, not due, invalid or held, and returns its report.
func passReport(t *testing.T, seed uint64, nroots int) *worker.Report {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	now := time.Now()
	stores := map[string]objstore.Store{}
	var cfgRoots []roots.Root
	for i := range nroots {
		m := memstore.New()
		m.Clock = func() time.Time { return now.Add(-30 * 24 * time.Hour) }
		uri := fmt.Sprintf("memory://root-%d", i)
		stores[uri] = m
		cfgRoots = append(cfgRoots, roots.Root{URI: uri})
		for j := range 40 + r.IntN(40) {
			name := fmt.Sprintf("t%03d", j)
			if r.IntN(4) == 0 {
				name = oddNames[r.IntN(len(oddNames))] + fmt.Sprint(j)
			}
			put := func(key, body string) {
				_, err := m.Put(ctx, key, []byte(body))
				require.NoError(t, err)
			}
			put(lifecycle.TableDir(name)+"_versions/1.manifest", "x")
			switch r.IntN(5) {
			case 0: // live
			case 1:
				put(lifecycle.MarkerKey(name), string(lifecycle.EncodeMarker(now.Add(-30*24*time.Hour), 24*time.Hour)))
			case 2:
				put(lifecycle.MarkerKey(name), "not json")
			case 3:
				put(lifecycle.MarkerKey(name), string(lifecycle.EncodeMarker(now.Add(-30*24*time.Hour), 24*time.Hour)))
				put(lifecycle.HoldKey(name), `{"reason":"case <7>"}`)
			default:
				put(lifecycle.MarkerKey(name), string(lifecycle.EncodeMarker(now.Add(-30*24*time.Hour), time.Duration(60+r.IntN(30))*24*time.Hour)))
			}
		}
		m.Clock = func() time.Time { return now }
	}
	cfg := config.Default()
	cfg.DryRun = true
	cfg.Safety.BlastRadiusMaxPercent = 0
	switch seed % 4 {
	case 2:
		cfg.Safety.BlastRadiusMaxTables = 1 // due tables refused, kept compactly
	case 3:
		cfg.Paused = true
	}
	w := &worker.Worker{
		Config: cfg,
		Open:   func(_ context.Context, r roots.Root) (objstore.Store, error) { return stores[r.URI], nil },
		Roots:  func(context.Context) ([]roots.Root, error) { return cfgRoots, nil },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Owner:  "test/1",
	}
	rep, err := w.Pass(ctx, nil)
	require.NoError(t, err)
	return rep
}

// wholeReport is the report as purgeReportOf made it before the pass kept
// not-due tables compactly: every decision, not-due ones included, as
// entries.
func wholeReport(rep *worker.Report, withRoot bool) *purgeReport {
	out := newPurgeReport(rep.DryRun)
	multi := withRoot || len(rep.Roots) > 1
	for _, rr := range rep.Roots {
		root := ""
		if multi {
			root = rr.Root
		}
		ds := slices.Collect(rr.All())
		slices.SortStableFunc(ds, func(a, b worker.Decision) int {
			if c := a.Status.PurgeAfter.Compare(b.Status.PurgeAfter); c != 0 {
				return c
			}
			return strings.Compare(a.Table, b.Table)
		})
		for _, d := range ds {
			switch d.Action {
			case outcome.Purged, outcome.DryRun:
				out.Purged = append(out.Purged, purgedJSON{Root: root, Name: d.Table, Objects: d.Objects, Bytes: d.Bytes})
			case outcome.Failed:
				out.Failed = append(out.Failed, failedJSON{Root: root, Name: d.Table, Code: d.Reason, Error: failureText(d)})
			default:
				out.Skipped = append(out.Skipped, skippedJSON{Root: root, Name: d.Table, Action: d.Action, Code: d.Reason, Reason: skipReason(d)})
			}
		}
	}
	key := func(root, name string) string { return root + "\x00" + name }
	sortByName(out.Skipped, func(s skippedJSON) string { return key(s.Root, s.Name) })
	sortByName(out.Failed, func(f failedJSON) string { return key(f.Root, f.Name) })
	return out
}

// tabwriterPurgeTable is renderPurgeTable as it was, through text/tabwriter.
func tabwriterPurgeTable(w io.Writer, r *purgeReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	purged := "PURGED"
	if r.DryRun {
		purged = "WOULD PURGE (dry run)"
	}
	if len(r.Purged) > 0 {
		fmt.Fprintf(tw, "%s: %d\n", purged, len(r.Purged))
		fmt.Fprintln(tw, "  NAME\tOBJECTS\tBYTES")
		for _, p := range r.Purged {
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", displayName(p.Name), p.Objects, humanBytes(p.Bytes))
		}
		fmt.Fprintln(tw)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(tw, "SKIPPED: %d (kept for now; a later pass retries)\n", len(r.Skipped))
		fmt.Fprintln(tw, "  NAME\tREASON")
		for _, s := range r.Skipped {
			fmt.Fprintf(tw, "  %s\t%s\n", displayName(s.Name), safeText(s.Reason))
		}
		fmt.Fprintln(tw)
	}
	if tables := r.failedTables(); len(tables) > 0 {
		fmt.Fprintf(tw, "FAILED: %d (needs an operator)\n", len(tables))
		fmt.Fprintln(tw, "  NAME\tERROR")
		for _, f := range tables {
			fmt.Fprintf(tw, "  %s\t%s\n", displayName(f.Name), safeText(f.Error))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.summary())
	return err
}

// TestPurgeReportStreamsTheSameBytes: the purge report of a pass, written
// entry by entry with its not-due tables read from the pass's compact
// records, is byte for byte the JSON and the table the whole report wrote
// through json.Encoder and text/tabwriter.
func TestPurgeReportStreamsTheSameBytes(t *testing.T) {
	for seed := range uint64(8) {
		roots := 1 + int(seed%2)
		rep := passReport(t, seed, roots)
		got := purgeReportOf(rep, false)
		want := wholeReport(rep, false)
		require.NotZero(t, got.skippedLen()-len(got.Skipped), "seed %d: some tables not due", seed)
		require.Equal(t, want.Skipped, slices.Collect(got.skipped()), "seed %d: skipped, by root and name", seed)
		require.Equal(t, want.Purged, got.Purged)
		require.Equal(t, want.Failed, got.Failed)

		var a, b bytes.Buffer
		require.NoError(t, writeJSON(&a, want))
		require.NoError(t, writePurgeJSON(&b, got))
		require.Equal(t, a.String(), b.String(), "seed %d: JSON", seed)
		a.Reset()
		b.Reset()
		require.NoError(t, tabwriterPurgeTable(&a, want))
		require.NoError(t, renderPurgeTable(&b, got))
		require.Equal(t, a.String(), b.String(), "seed %d: table", seed)
	}
	// An empty report: arrays, not nulls; no section.
	var a, b bytes.Buffer
	require.NoError(t, writeJSON(&a, newPurgeReport(true)))
	require.NoError(t, writePurgeJSON(&b, newPurgeReport(true)))
	require.Equal(t, a.String(), b.String())
}

// tabwriterStatusTable is renderStatusTable as it was.
func tabwriterStatusTable(w io.Writer, all []reaper.TableStatus, now time.Time, floor time.Duration) error {
	if len(all) == 0 {
		_, err := fmt.Fprintln(w, "no tables in this root")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tDELETED_AT\tTTL\tPURGE_AFTER\tNOTE")
	for _, s := range all {
		deleted, ttl, after := "-", "-", "-"
		if s.Marker != nil {
			deleted = formatTime(s.DeletedAt)
			ttl = formatDuration(s.TTL)
			after = formatTime(s.PurgeAfter)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", displayName(s.Name), s.State, deleted, ttl, after, safeText(statusNote(s, now, floor)))
	}
	return tw.Flush()
}

// randomStatuses are n statuses of odd names and every kind of row.
func randomStatuses(r *rand.Rand, n int, now time.Time) []reaper.TableStatus {
	var out []reaper.TableStatus
	for i := range n {
		s := reaper.TableStatus{Name: fmt.Sprintf("%s%d", oddNames[r.IntN(len(oddNames))], i), State: reaper.StateExists, HasData: true}
		switch r.IntN(4) {
		case 1:
			m := reaper.Marker{DeletedAtMs: now.Add(-time.Duration(r.IntN(1000)) * time.Hour).UnixMilli(), TTLMs: int64(r.IntN(1000)) * 3600_000, HasTTL: true}
			s.State, s.Marker = reaper.StateSoftDeleted, &m
			s.TTL, s.DeletedAt = m.TTL(0), m.DeletedAt()
			s.PurgeAfter = m.PurgeAfter(0)
		case 2:
			s.State, s.Problem = reaper.StateInvalidMarker, "marker <is> \"bad\"\x1b[31m"
		case 3:
			s.Hold = &reaper.Hold{Reason: "case & <7>"}
		}
		out = append(out, s)
	}
	return out
}

// TestStatusStreamsTheSameBytes: a status of up to statusTableRows names
// prints exactly the table text/tabwriter printed, and its JSON exactly
// what json.Encoder printed.
func TestStatusStreamsTheSameBytes(t *testing.T) {
	now := time.Now()
	for seed, n := range []int{0, 1, 7, 300, statusTableRows} {
		all := randomStatuses(rand.New(rand.NewPCG(uint64(seed), 3)), n, now)
		floor := time.Duration(seed) * time.Hour
		var a, b bytes.Buffer
		require.NoError(t, tabwriterStatusTable(&a, all, now, floor))
		require.NoError(t, renderStatusTable(&b, all, now, floor))
		require.Equal(t, a.String(), b.String(), "%d rows: table", n)
		out := make([]statusJSON, len(all))
		for i, s := range all {
			out[i] = toStatusJSON(s, now, floor)
		}
		a.Reset()
		b.Reset()
		require.NoError(t, writeJSON(&a, out))
		require.NoError(t, renderStatusJSON(&b, all, now, floor))
		require.Equal(t, a.String(), b.String(), "%d rows: JSON", n)
	}
}

// TestStatusTableBlocks: past statusTableRows names the table is aligned
// block by block: every block as tabwriter aligns it alone but never
// narrower than the blocks before, so columns only widen down the output.
func TestStatusTableBlocks(t *testing.T) {
	now := time.Now()
	all := randomStatuses(rand.New(rand.NewPCG(9, 9)), 2*statusTableRows+5, now)
	// The longest names are in the first block: later blocks keep its
	// widths though their own names are short.
	all[0].Name = strings.Repeat("w", 80)
	var b bytes.Buffer
	require.NoError(t, renderStatusTable(&b, all, now, 0))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, len(all)+1, "a header and a row per name")
	require.True(t, strings.HasPrefix(lines[0], "NAME"+strings.Repeat(" ", 78)+"STATE"), lines[0])
	for i, l := range lines[1:] {
		require.Equal(t, strings.Index(lines[0], "STATE"), len([]rune(l[:strings.Index(l, string(all[i].State))])), "row %d: %q", i, l)
	}
}

// TestStatusCutShort: a status whose listing fails part way keeps the rows
// it printed; its JSON array is left open, so no reader takes it for the
// whole root, and an empty table says nothing rather than "no tables".
func TestStatusCutShort(t *testing.T) {
	now := time.Now()
	all := randomStatuses(rand.New(rand.NewPCG(4, 4)), 3, now)
	var b bytes.Buffer
	p := newStatusJSON(&b, 0)
	for _, s := range all {
		require.NoError(t, p.row(s, now))
	}
	require.NoError(t, p.close(false))
	require.True(t, strings.HasPrefix(b.String(), "[\n  {"))
	require.False(t, strings.HasSuffix(strings.TrimSpace(b.String()), "]"), "an unclosed array: %s", b.String())
	require.Equal(t, 3, strings.Count(b.String(), `"name":`))

	b.Reset()
	require.NoError(t, newStatusTable(&b, 0).close(false))
	require.Empty(t, b.String())
}
