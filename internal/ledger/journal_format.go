package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// JournalPrefix is where passes keep their journals, one folder per pass:
//
//	journal/<pass id>/lease       the lease of whoever owns the records (lock's format)
//	journal/<pass id>/<hash>.json one record per table the pass began to purge
//
// <hash> is the first 128 bits, in hex, of SHA-256(root URI, NUL, table
// name): a table name may hold any byte but '/', '\' and NUL, and a root
// URI ':' and more, so neither can be a key segment on every store. The
// names are in the record.
const JournalPrefix = "journal/"

const (
	journalLeaseName = "lease"
	recordSuffix     = ".json"
	recordHashLen    = 32 // hex digits
	recordFormat     = 1
	// maxRecordBytes caps a journal record's read: a record is a row of
	// JSON (under 2 KiB with the longest names and error text), so a larger
	// object is not one, and must not exhaust memory: it fails the fold
	// like a record that does not parse.
	maxRecordBytes = 64 << 10
)

// Record kinds: what the pass is about to do, then what it did.
const (
	kindIntent  = "intent"
	kindOutcome = "outcome"
)

func journalDir(passID string) string      { return JournalPrefix + passID + "/" }
func journalLeaseKey(passID string) string { return journalDir(passID) + journalLeaseName }

// recordKey is the key of the record of table of root in pass passID.
func recordKey(passID, root, table, location string) string {
	id := root + "\x00" + table
	if location != "" {
		// Two directories may carry one object id: the directory tells
		// them apart (a root table's key is as it always was).
		id += "\x00" + location
	}
	h := sha256.Sum256([]byte(id))
	return journalDir(passID) + hex.EncodeToString(h[:recordHashLen/2]) + recordSuffix
}

// isJournalLease reports whether key is a journal's lease.
func isJournalLease(key string) bool {
	_, name, ok := journalKey(key)
	return ok && name == journalLeaseName
}

// journalKey splits a key under JournalPrefix into its pass id and name
// ("lease" or a record's "<hash>.json"); ok is false for any other key.
func journalKey(key string) (passID, name string, ok bool) {
	rest, found := strings.CutPrefix(key, JournalPrefix)
	passID, name, slash := strings.Cut(rest, "/")
	if !found || !slash || !passIDPattern.MatchString(passID) {
		return "", "", false
	}
	if name == journalLeaseName {
		return passID, name, true
	}
	hash, isRecord := strings.CutSuffix(name, recordSuffix)
	if !isRecord || len(hash) != recordHashLen || strings.Trim(hash, "0123456789abcdef") != "" {
		return "", "", false
	}
	return passID, name, true
}

// record is one journal object, a few hundred bytes of JSON. An intent
// is written before the purge commits; the outcome replaces it once the
// table is decided.
type record struct {
	Format      int    `json:"format"`
	Kind        string `json:"kind"`
	PassStarted string `json:"pass_started"`
	// Written is when the record was written, by the writer's clock.
	Written string `json:"written"`
	// Objects and Bytes are, in an intent, what the purge was about to
	// delete; Committed that the table already carried a purge commit (an
	// earlier purge committed it and stopped).
	Objects   int64   `json:"objects,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	Committed bool    `json:"committed,omitempty"`
	Row       rowJSON `json:"row"`
}

// rowJSON is a Row in a record: times in RFC 3339 with milliseconds, ""
// for null.
type rowJSON struct {
	PassID     string `json:"pass_id"`
	Root       text   `json:"root"`
	Table      text   `json:"table"`
	Action     string `json:"action,omitempty"`
	Reason     text   `json:"reason,omitempty"`
	DeletedAt  string `json:"deleted_at,omitempty"`
	TTLMs      *int64 `json:"ttl_ms,omitempty"`
	PurgeAfter string `json:"purge_after,omitempty"`
	Objects    int64  `json:"objects"`
	Bytes      int64  `json:"bytes"`
	Started    string `json:"started"`
	Finished   string `json:"finished"`
	Error      text   `json:"error,omitempty"`
	Version    string `json:"reaper_version"`
	Host       string `json:"host"`
	Location   text   `json:"location,omitempty"`
}

// text is a string that survives JSON whatever its bytes: valid UTF-8 is a
// JSON string, anything else {"base64": "..."}. A table name or a path may
// hold bytes that are not UTF-8, which encoding/json would replace.
type text string

type base64Text struct {
	Base64 []byte `json:"base64"`
}

func (t text) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(t)) {
		return json.Marshal(string(t))
	}
	return json.Marshal(base64Text{Base64: []byte(t)})
}

func (t *text) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(b, []byte("{")) {
		var o base64Text
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*t = text(o.Base64)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(jsonTimeLayout)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", field, err)
	}
	return time.UnixMilli(t.UnixMilli()).UTC(), nil
}

func toRowJSON(r Row) rowJSON {
	j := rowJSON{
		PassID: r.PassID, Root: text(r.Root), Table: text(r.Table), Action: r.Action, Reason: text(r.Reason),
		DeletedAt: formatTime(r.DeletedAt), PurgeAfter: formatTime(r.PurgeAfter),
		Objects: r.Objects, Bytes: r.Bytes, Started: formatTime(r.Started), Finished: formatTime(r.Finished),
		Error: text(r.Error), Version: r.Version, Host: r.Host, Location: text(r.Location),
	}
	if r.TTL != nil {
		ms := r.TTL.Milliseconds()
		j.TTLMs = &ms
	}
	return j
}

func (j rowJSON) row() (Row, error) {
	r := Row{
		PassID: j.PassID, Root: string(j.Root), Table: string(j.Table), Action: j.Action, Reason: string(j.Reason),
		Objects: j.Objects, Bytes: j.Bytes, Error: string(j.Error), Version: j.Version, Host: j.Host,
		Location: string(j.Location),
	}
	if j.TTLMs != nil {
		d := time.Duration(*j.TTLMs) * time.Millisecond
		r.TTL = &d
	}
	var errs []error
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{{"deleted_at", j.DeletedAt, &r.DeletedAt}, {"purge_after", j.PurgeAfter, &r.PurgeAfter},
		{"started", j.Started, &r.Started}, {"finished", j.Finished, &r.Finished}} {
		t, err := parseTime(f.name, f.in)
		errs = append(errs, err)
		*f.out = t
	}
	return r, errors.Join(errs...)
}

func encodeRecord(rec record) ([]byte, error) {
	rec.Format = recordFormat
	return json.Marshal(rec)
}

// decodeRecord parses the record stored at key, checking that it belongs
// to the pass its key names.
func decodeRecord(key string, body []byte) (record, error) {
	var rec record
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&rec); err != nil {
		return rec, fmt.Errorf("journal record %s: %w", key, err)
	}
	passID, _, _ := journalKey(key)
	switch {
	case rec.Format != recordFormat:
		return rec, fmt.Errorf("journal record %s: format %d, want %d (written by another reaper version?)", key, rec.Format, recordFormat)
	case rec.Kind != kindIntent && rec.Kind != kindOutcome:
		return rec, fmt.Errorf("journal record %s: kind %q, want %q or %q", key, rec.Kind, kindIntent, kindOutcome)
	case rec.Row.PassID != passID:
		return rec, fmt.Errorf("journal record %s: pass id %q, but the key names pass %q", key, rec.Row.PassID, passID)
	case rec.Row.Table == "":
		return rec, fmt.Errorf("journal record %s: no table", key)
	case key != recordKey(passID, string(rec.Row.Root), string(rec.Row.Table), string(rec.Row.Location)):
		return rec, fmt.Errorf("journal record %s: root and table do not hash to its key", key)
	}
	if _, err := rec.Row.row(); err != nil {
		return rec, fmt.Errorf("journal record %s: %w", key, err)
	}
	if _, err := parseTime("written", rec.Written); err != nil {
		return rec, fmt.Errorf("journal record %s: %w", key, err)
	}
	return rec, nil
}

// toRow is the ledger row a record stands for. An outcome is the table's
// row as its pass decided it. An intent without an outcome is a purge
// whose end nobody recorded: folded (recoveredBy set), its pass ended
// without finishing; pending, it may still be running.
func (rec record) toRow(recoveredBy string, pending bool) Row {
	r, _ := rec.Row.row() // checked by decodeRecord
	r.RecoveredBy, r.Pending = recoveredBy, pending
	if rec.Kind == kindOutcome {
		return r
	}
	written, _ := parseTime("written", rec.Written)
	r.Action = string(outcome.Failed)
	r.Objects, r.Bytes = 0, 0
	r.Finished = r.Started
	if written.After(r.Started) {
		r.Finished = written
	}
	r.Error = unfinishedDetail(rec, pending)
	r.Reason = string(outcome.ReasonUnfinished) + ": " + r.Error
	return r
}

// goneRow is row, the folded row of an intent without an outcome, once
// the folding pass by found the table gone from its root (its marker and
// directory both): the purge finished and only its outcome was lost. It is
// purged, with the intent's objects and bytes (what the purge was about
// to delete, all gone now), and says so.
func (rec record) goneRow(row Row, by string) Row {
	row.Action = string(outcome.Purged)
	row.Objects, row.Bytes = rec.Objects, rec.Bytes
	row.Error = ""
	row.Reason = string(outcome.ReasonDue) + ": " + fmt.Sprintf(
		"recovered: pass %s recorded its intent to purge %d object(s) (%d bytes) and ended before recording the outcome; "+
			"when pass %s folded its journal the table's marker and directory were both gone, so the purge finished "+
			"(objects and bytes are the intent's; if that purge had stopped, a later pass that finished it recorded a row of its own)",
		rec.Row.PassID, rec.Objects, rec.Bytes, by)
	return row
}

// unfinishedDetail says what an intent without an outcome means. The
// intent is written before the purge commits, so the table may be
// untouched; once committed, only a purge can finish it, and that purge
// writes a row of its own.
func unfinishedDetail(rec record, pending bool) string {
	what := fmt.Sprintf("pass %s recorded its intent to purge %d object(s) (%d bytes)", rec.Row.PassID, rec.Objects, rec.Bytes)
	state := "the purge may have stopped before its commit (the table untouched, still soft-deleted) or after it (partly or fully purged)"
	if rec.Committed {
		state = "the table already carried a purge commit, so it is partly or fully purged"
	}
	if pending {
		return what + " and no outcome yet: the pass is still running, or it was killed and no pass has folded its journal yet; if killed, " +
			state + "; a later pass finishes a committed table and records it; 'reaper status' shows the table now"
	}
	return what + " and ended (killed, or its journal lease lost) before recording the outcome: " + state +
		"; a later pass finishes a committed table and records it; 'reaper status' shows the table now"
}
