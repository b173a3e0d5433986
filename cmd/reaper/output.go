package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/lance-reaper/reaper"
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
	// RetentionRecord: a retention run was cut short (or is running) and
	// left its record beside the table.
	RetentionRecord bool `json:"retention_record"`
	// Namespace and Location, for a table in a LanceDB namespace only: its
	// namespace path and its directory (Name is its object id).
	Namespace []string `json:"namespace,omitempty"`
	Location  string   `json:"location,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func toStatusJSON(s reaper.TableStatus, now time.Time, floor time.Duration) statusJSON {
	out := statusJSON{State: string(s.State), Due: s.Due(now), BelowMinTTL: belowFloor(s, floor),
		RetentionRecord: s.RetainRecord, Namespace: s.Namespace()}
	out.Name, out.Location = jsonName(s.Name)
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
	return renderStatus(newStatusJSON(w, floor), all, now)
}

// renderStatusTable prints aligned columns NAME STATE DELETED_AT TTL
// PURGE_AFTER NOTE; floor is the TTL floor purge applies (0: none).
func renderStatusTable(w io.Writer, all []reaper.TableStatus, now time.Time, floor time.Duration) error {
	return renderStatus(newStatusTable(w, floor), all, now)
}

func renderStatus(p statusPrinter, all []reaper.TableStatus, now time.Time) error {
	for _, s := range all {
		if err := p.row(s, now); err != nil {
			return err
		}
	}
	return p.close(true)
}

// statusPrinter writes the rows of `reaper status` as the root's listing
// hands them over (reaper.Namespace.EachStatus), so a root of a million
// tables is never held whole. close(false) ends an output cut short by an
// error: the rows written stay, and a JSON array is left unclosed, so no
// reader takes it for the whole root.
type statusPrinter interface {
	row(s reaper.TableStatus, now time.Time) error
	// rowWith is row with the retention columns (status --versions):
	// sum is nil for a name that is not a live table.
	rowWith(s reaper.TableStatus, sum *reaper.RetentionSummary, now time.Time) error
	close(complete bool) error
}

// statusJSON writes the JSON array element by element.
type statusJSONPrinter struct {
	w     *bufio.Writer
	a     jsonArray
	floor time.Duration
	// versions adds the retention keys to every element, policy the
	// retain they stand for.
	versions bool
	policy   string
}

func newStatusJSON(w io.Writer, floor time.Duration) *statusJSONPrinter {
	bw := flushTo(w)
	return &statusJSONPrinter{w: bw, a: jsonArray{w: bw}, floor: floor}
}

func (p *statusJSONPrinter) row(s reaper.TableStatus, now time.Time) error {
	return p.rowWith(s, nil, now)
}

func (p *statusJSONPrinter) rowWith(s reaper.TableStatus, sum *reaper.RetentionSummary, now time.Time) error {
	if p.versions {
		return p.a.add(toStatusVersionsJSON(toStatusJSON(s, now, p.floor), sum, p.policy))
	}
	return p.a.add(toStatusJSON(s, now, p.floor))
}

func (p *statusJSONPrinter) close(complete bool) error {
	if complete {
		p.a.close()
		p.w.WriteString("\n")
	}
	return p.w.Flush()
}

// statusTableRows is how many rows of the status table are aligned
// together: a root of up to that many names prints as one table; a
// larger one in blocks of that many rows, each aligned to the widest cell
// seen so far (so columns only ever widen down the output).
const statusTableRows = 10_000

// statusTablePrinter writes the aligned table in blocks of rows.
type statusTablePrinter struct {
	w     *bufio.Writer
	cols  columns
	rows  [][]string
	n     int
	floor time.Duration
	// versions, when set, adds the retention columns and sums them.
	versions *versionColumns
}

func newStatusTable(w io.Writer, floor time.Duration) *statusTablePrinter {
	return &statusTablePrinter{w: flushTo(w), floor: floor,
		rows: [][]string{{"NAME", "STATE", "DELETED_AT", "TTL", "PURGE_AFTER", "NOTE"}}}
}

func (p *statusTablePrinter) row(s reaper.TableStatus, now time.Time) error {
	return p.rowWith(s, nil, now)
}

func (p *statusTablePrinter) rowWith(s reaper.TableStatus, sum *reaper.RetentionSummary, now time.Time) error {
	deleted, ttl, after := "-", "-", "-"
	if s.Marker != nil {
		deleted = formatTime(s.DeletedAt)
		ttl = formatDuration(s.TTL)
		after = formatTime(s.PurgeAfter)
	}
	note := statusNote(s, now, p.floor)
	cells := []string{displayName(s.Name), string(s.State), deleted, ttl, after}
	if p.versions != nil {
		var more []string
		if s.State == reaper.StateCatalog {
			more = p.versions.catalogCells(sum)
		} else {
			more, note = p.versions.cells(sum, note)
		}
		cells = append(cells, more...)
	}
	p.rows = append(p.rows, append(cells, safeText(note)))
	p.n++
	if len(p.rows) > statusTableRows {
		return p.flushRows()
	}
	return nil
}

// flushRows aligns and writes the rows held.
func (p *statusTablePrinter) flushRows() error {
	for _, r := range p.rows {
		p.cols.fit(r)
	}
	for _, r := range p.rows {
		p.cols.write(p.w, r)
	}
	p.rows = p.rows[:0]
	return p.w.Flush()
}

func (p *statusTablePrinter) close(complete bool) error {
	if p.n == 0 {
		if complete {
			p.w.WriteString("no tables in this root\n")
		}
		return p.w.Flush()
	}
	if err := p.flushRows(); err != nil {
		return err
	}
	if complete && p.versions != nil {
		p.w.WriteString(p.versions.summary() + "\n")
	}
	return p.w.Flush()
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
	if s.RetainRecord {
		notes = append(notes, "a version-retention run left its record "+s.Name+".reaper-retain (cut short, or running): the next retain takes over what of it is still true; 'retain --dry-run' shows it")
	}
	if len(notes) == 0 {
		return "-" // a trailing empty cell would leave padding at the line end
	}
	return strings.Join(notes, "; ")
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
