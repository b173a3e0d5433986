package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
)

func checkFormat(f string) error {
	if f != "" && f != formatTable && f != formatJSON {
		return usagef("-o %q: want table or json", f)
	}
	return nil
}

// statusJSON is one element of `reaper status -o json`. Pointer fields are
// null where they do not apply.
type statusJSON struct {
	Name             string  `json:"name"`
	State            string  `json:"state"`
	DeletedAtMs      *int64  `json:"deleted_at_ms"`
	TTLMs            *int64  `json:"ttl_ms"`
	PurgeAfterMs     *int64  `json:"purge_after_ms"`
	Due              bool    `json:"due"`
	BelowMinTTL      bool    `json:"below_min_ttl"`
	Problem          *string `json:"problem"`
	LeaseOwner       *string `json:"lease_owner"`
	LeaseExpiresAtMs *int64  `json:"lease_expires_at_ms"`
	Held             bool    `json:"held"`
	HoldReason       *string `json:"hold_reason"`
}

func ptr[T any](v T) *T { return &v }

func toStatusJSON(s reaper.TableStatus, now time.Time, floor time.Duration) statusJSON {
	out := statusJSON{Name: s.Name, State: string(s.State), Due: s.Due(now), BelowMinTTL: belowFloor(s, floor)}
	if s.Marker != nil {
		out.DeletedAtMs = ptr(s.Marker.DeletedAtMs)
		out.TTLMs = ptr(s.TTL.Milliseconds())
		out.PurgeAfterMs = ptr(s.PurgeAfter.UnixMilli())
	}
	if s.Problem != "" {
		out.Problem = ptr(s.Problem)
	}
	if s.Hold != nil {
		out.Held, out.HoldReason = true, ptr(s.Hold.Reason)
	}
	if s.Lease != nil {
		out.LeaseOwner = ptr(s.Lease.Owner)
		if !s.Lease.ExpiresAt.IsZero() {
			out.LeaseExpiresAtMs = ptr(s.Lease.ExpiresAt.UnixMilli())
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func renderStatusJSON(w io.Writer, all []reaper.TableStatus, now time.Time, floor time.Duration) error {
	out := make([]statusJSON, len(all))
	for i, s := range all {
		out[i] = toStatusJSON(s, now, floor)
	}
	return writeJSON(w, out)
}

// renderStatusTable prints aligned columns NAME STATE DELETED_AT TTL
// PURGE_AFTER NOTE; floor is the TTL floor purge applies (0: none).
func renderStatusTable(w io.Writer, all []reaper.TableStatus, now time.Time, floor time.Duration) error {
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

// statusNote says what an operator needs to know about one table.
func statusNote(s reaper.TableStatus, now time.Time, floor time.Duration) string {
	var notes []string
	if s.Problem != "" {
		notes = append(notes, s.Problem)
	}
	if s.Hold != nil {
		// Live tables too: a hold placed before a drop is what keeps it.
		notes = append(notes, "legal hold: "+s.Hold.Reason)
	}
	switch {
	case s.State == reaper.StateInvalidMarker:
		notes = append(notes, "never purged; fix the marker or remove it with 'reaper revive'")
	case s.State == reaper.StateUnreadable:
		notes = append(notes, "never purged while reaper cannot read it; check the store's permissions on that key")
	case s.State == reaper.StateNotATable, s.State == reaper.StateStuck:
	case s.Marker == nil || s.FutureDated:
	case s.Hold != nil:
		notes = append(notes, "never purged until 'reaper release'")
	case s.Due(now) && belowFloor(s, floor):
		notes = append(notes, "past its ttl, but "+shortTTLWarning(s.TTL, floor))
	case s.Due(now):
		notes = append(notes, "due")
	case belowFloor(s, floor):
		notes = append(notes, "due in "+formatDuration(roundForHumans(s.PurgeAfter.Sub(now)))+", but "+shortTTLWarning(s.TTL, floor))
	default:
		notes = append(notes, "due in "+formatDuration(roundForHumans(s.PurgeAfter.Sub(now))))
	}
	switch s.State {
	case reaper.StateOrphanMarker:
		notes = append(notes, "data already gone; purge removes the marker")
	case reaper.StatePartiallyPurged:
		notes = append(notes, "a purge committed and deleted part of it: it cannot be revived; the next purge finishes it")
	}
	if s.Lease != nil {
		notes = append(notes, leaseHolder(s.Lease, s.LeaseTakeoverAt))
	}
	if len(notes) == 0 {
		return "-" // a trailing empty cell would leave padding at the line end
	}
	return strings.Join(notes, "; ")
}

// purgeReport is the result of one purge pass, also its JSON form. The
// three lists are never nil, so JSON always shows arrays.
type purgeReport struct {
	Purged  []purgedJSON  `json:"purged"`
	Skipped []skippedJSON `json:"skipped"`
	Failed  []failedJSON  `json:"failed"`
	DryRun  bool          `json:"dry_run,omitempty"`
	// LedgerErrors are the audit ledger's failed writes: each fails the
	// pass (exit 1). Absent when there are none.
	LedgerErrors []string `json:"ledger_errors,omitempty"`
	// misconfigured holds the root failures an operator fixes in the
	// configuration (exit 2), each "<root>: <problem>; <fix>".
	misconfigured []error
}

type purgedJSON struct {
	Root    string `json:"root,omitempty"`
	Name    string `json:"name"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

// skippedJSON is a table kept by the pass: Action and Code are the outcome
// vocabulary (as in the ledger and the metrics), Reason the sentence.
type skippedJSON struct {
	Root   string         `json:"root,omitempty"`
	Name   string         `json:"name"`
	Action outcome.Action `json:"action"`
	Code   outcome.Reason `json:"code"`
	Reason string         `json:"reason"`
}

// failedJSON is a failed table (or root, without a name): Code is its
// outcome reason, Error the sentence.
type failedJSON struct {
	Root  string         `json:"root,omitempty"`
	Name  string         `json:"name"`
	Code  outcome.Reason `json:"code"`
	Error string         `json:"error"`
}

func newPurgeReport(dryRun bool) *purgeReport {
	return &purgeReport{Purged: []purgedJSON{}, Skipped: []skippedJSON{}, Failed: []failedJSON{}, DryRun: dryRun}
}

func (r *purgeReport) totals() (objects, bytes int64) {
	for _, p := range r.Purged {
		objects += p.Objects
		bytes += p.Bytes
	}
	return objects, bytes
}

// failedTables are the failed entries that name a table.
func (r *purgeReport) failedTables() []failedJSON {
	var out []failedJSON
	for _, f := range r.Failed {
		if f.Name != "" {
			out = append(out, f)
		}
	}
	return out
}

// failedRoots are the roots that could not be opened or listed.
func (r *purgeReport) failedRoots() []failedJSON {
	var out []failedJSON
	for _, f := range r.Failed {
		if f.Name == "" {
			out = append(out, f)
		}
	}
	return out
}

// summary is the last line of the table output.
func (r *purgeReport) summary() string {
	objects, bytes := r.totals()
	tables, roots := r.failedTables(), r.failedRoots()
	s := fmt.Sprintf("reclaimed %d objects, %s from %d tables; %d skipped, %d failed",
		objects, humanBytes(bytes), len(r.Purged), len(r.Skipped), len(tables))
	if len(roots) > 0 {
		s += fmt.Sprintf("; %d root(s) could not be read", len(roots))
	}
	if r.DryRun {
		s = "dry run, nothing was deleted: would have " + s
	}
	return s
}

// renderPurgeTable prints one section per outcome and the summary line.
func renderPurgeTable(w io.Writer, r *purgeReport) error {
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
	if roots := r.failedRoots(); len(roots) > 0 {
		fmt.Fprintf(tw, "ROOTS FAILED: %d (not read; nothing in them was purged)\n", len(roots))
		fmt.Fprintln(tw, "  ROOT\tERROR")
		for _, f := range roots {
			fmt.Fprintf(tw, "  %s\t%s\n", safeText(f.Root), safeText(f.Error))
		}
		fmt.Fprintln(tw)
	}
	if len(r.LedgerErrors) > 0 {
		fmt.Fprintf(tw, "AUDIT LEDGER: %d write(s) failed (the audit trail of this pass may be incomplete)\n", len(r.LedgerErrors))
		for _, e := range r.LedgerErrors {
			fmt.Fprintf(tw, "  %s\n", e)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.summary())
	return err
}

// formatTime renders a time in UTC RFC 3339; a saturated purge time (a TTL
// so large it never comes) reads "never".
func formatTime(t time.Time) string {
	if t.UnixMilli() == math.MaxInt64 {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// formatDuration renders 7d, 1d12h, 1h30m, 45s, 10ms.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	const day = 24 * time.Hour
	var b strings.Builder
	if days := d / day; days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if rest := d % day; rest > 0 {
		s := rest.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		b.WriteString(s)
	}
	return b.String()
}

// roundForHumans keeps the two most useful units of a wait.
func roundForHumans(d time.Duration) time.Duration {
	switch {
	case d >= 24*time.Hour:
		return d.Round(time.Hour)
	case d >= time.Minute:
		return d.Round(time.Minute)
	default:
		return d.Round(time.Second)
	}
}

// humanBytes renders 512 B, 1.5 KiB, 3.2 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
