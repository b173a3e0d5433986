package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// recoveredInfix joins the ids in a recovered file's name:
// <time>-<dead pass id>.recovered-<folding pass id>.parquet. It never
// takes the dead pass's own key, which a pass killed while removing its
// journal has already written.
const recoveredInfix = ".recovered-"

// RecoveredKey is the key of the file pass by folds from the journal of
// dead, whose last recorded row finished at end.
func RecoveredKey(dead, by string, end time.Time) string {
	return Key(dead+recoveredInfix+by, end)
}

// Recovered is one dead pass's journal folded into the ledger.
type Recovered struct {
	// PassID is the dead pass's id, Key the file written, Rows its rows.
	PassID string
	Key    string
	Rows   int
}

// Recover folds into the ledger the journals that passes left behind: a
// pass killed before it wrote its file, or one that could not write it.
// Pass by (the caller, whose own journal is left alone) takes a journal's
// lease first: a journal whose lease is held (its pass still runs, or
// another pass is folding it) is not touched, and a pass whose lease
// was taken over can write nothing more into it (its writes carry the
// lease's fence). Under the lease it reads every record, writes them as
// one file (RecoveredKey, rows with recovered_by = by), then removes them
// and the lease. An outcome is its row as decided; an intent without one
// is failed, unfinished, unless it is a purge's and opts.TableGone finds
// its table gone: then it is purged. It returns the journals folded and
// every failure joined; a journal it could not fold stays for a later
// pass.
func Recover(ctx context.Context, store objstore.Store, by string, opts JournalOptions) ([]Recovered, error) {
	log := cmp.Or(opts.Logger, slog.Default())
	var dirs []string
	err := store.List(ctx, JournalPrefix, func(p objstore.Page) error {
		dirs = append(dirs, p.Prefixes...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list journals %s: %w", JournalPrefix, err)
	}
	locker := opts.locker(store)
	var out []Recovered
	var errs []error
	for _, d := range dirs {
		dead := strings.TrimSuffix(strings.TrimPrefix(d, JournalPrefix), "/")
		if dead == by {
			continue
		}
		if !passIDPattern.MatchString(dead) {
			log.WarnContext(ctx, "not a pass's journal: left alone", "prefix", d)
			continue
		}
		rec, err := foldJournal(ctx, store, locker, dead, by, opts.TableGone, log)
		if err != nil {
			errs = append(errs, err)
		}
		if rec.Key != "" {
			out = append(out, rec)
		}
	}
	return out, errors.Join(errs...)
}

// foldJournal folds the journal of pass dead, if it holds anything and
// its lease can be had; gone, if set, is JournalOptions.TableGone.
func foldJournal(ctx context.Context, store objstore.Store, locker *lock.Locker, dead, by string, gone tableGone, log *slog.Logger) (Recovered, error) {
	res := Recovered{PassID: dead}
	// Only a journal with an object in it is folded: a pass writes its
	// lease before any record, so a folder that took the lease of an empty
	// journal could be taking it from a pass about to write its first one.
	keys, err := journalKeys(ctx, store, dead)
	if err != nil || len(keys) == 0 {
		return res, err
	}
	lease, err := locker.Acquire(ctx, journalLeaseKey(dead))
	if errors.Is(err, lock.ErrLocked) {
		log.DebugContext(ctx, "journal in use: left alone", "journal_pass_id", dead, "error", err)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("fold the journal of pass %s: %w", dead, err)
	}
	defer func() {
		if err := lease.Release(ctx); err != nil {
			log.WarnContext(ctx, "release a folded journal's lease", "journal_pass_id", dead, "error", err)
		}
	}()
	// Listed again under the lease: what the pass wrote before it lost
	// its lease has landed (docs/PROTOCOL.md, A1) and is all there is.
	if keys, err = journalKeys(ctx, store, dead); err != nil {
		return res, err
	}
	rows, folded, err := readJournal(ctx, store, keys, by, gone, log)
	if err != nil {
		return res, fmt.Errorf("fold the journal of pass %s: %w", dead, err)
	}
	if len(rows) > 0 {
		started, _ := parseTime("pass_started", folded.passStarted)
		end := passEnd(started, rows)
		key := RecoveredKey(dead, by, end)
		body, err := encode(rows, passMeta(dead, started, by))
		if err == nil {
			_, err = store.Put(ctx, key, body)
		}
		if err != nil {
			return res, fmt.Errorf("write the folded journal of pass %s to %s: %w", dead, key, err)
		}
		res.Key, res.Rows = key, len(rows)
		log.WarnContext(ctx, "audit journal of a pass that ended without writing its ledger file folded into the ledger",
			"journal_pass_id", dead, "key", key, "rows", len(rows))
	}
	lctx := objstore.WithFence(ctx, lease)
	if err := deleteKeys(lctx, store, folded.keys); err != nil {
		return res, fmt.Errorf("fold the journal of pass %s: %w", dead, err)
	}
	_ = store.PruneEmpty(ctx, journalDir(dead))
	return res, nil
}

// journalKeys lists the objects of pass's journal (its lease included).
func journalKeys(ctx context.Context, store objstore.Store, pass string) ([]string, error) {
	var keys []string
	err := store.Walk(ctx, journalDir(pass), func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the journal of pass %s: %w", pass, err)
	}
	return keys, nil
}

// foldedRecords are the records read from one journal.
type foldedRecords struct {
	keys        []string // the records read (to remove once folded)
	passStarted string
}

// readJournal reads the records among keys as rows recovered by by, a
// purge's intent whose table gone says is gone as purged (goneRow). A key
// that is neither the lease nor a record is left where it is; a record
// that does not decode fails the fold (it is kept for an operator).
func readJournal(ctx context.Context, store objstore.Store, keys []string, by string, gone tableGone, log *slog.Logger) ([]Row, foldedRecords, error) {
	var rows []Row
	var f foldedRecords
	for _, k := range keys {
		_, name, ok := journalKey(k)
		if !ok || name == journalLeaseName {
			continue
		}
		body, _, err := store.Get(ctx, k, maxRecordBytes)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // folded meanwhile by a pass that held the lease before us
		}
		if err != nil {
			return nil, f, fmt.Errorf("read journal record %s: %w", k, err)
		}
		rec, err := decodeRecord(k, body)
		if err != nil {
			return nil, f, fmt.Errorf("%w; inspect the object, then delete it by hand to let the rest of the journal be folded", err)
		}
		rows = append(rows, foldRow(ctx, rec, by, gone, log))
		f.keys = append(f.keys, k)
		f.passStarted = rec.PassStarted
	}
	sortRows(rows)
	return rows, f, nil
}

// tableGone is JournalOptions.TableGone.
type tableGone func(ctx context.Context, root, table string) (bool, error)

// foldRow is the folded row of rec: as toRow, except a purge's intent
// whose table is gone from its root, marker and directory both, which is
// purged (goneRow). Only a purge's intent: it carries its marker's TTL,
// which a version retention's intent, of a live table, never does; a
// retention run's table gone since was dropped and purged by a pass of
// its own.
func foldRow(ctx context.Context, rec record, by string, gone tableGone, log *slog.Logger) Row {
	row := rec.toRow(by, false)
	if gone == nil || rec.Kind != kindIntent || rec.Row.TTLMs == nil {
		return row
	}
	root, table := string(rec.Row.Root), string(rec.Row.Table)
	isGone, err := gone(ctx, root, table)
	if err != nil {
		log.WarnContext(ctx, "folding a journal: cannot tell whether a table whose purge ended unrecorded is gone; its row stays unfinished",
			"journal_pass_id", rec.Row.PassID, "root", root, "table", table, "error", err)
	}
	if err != nil || !isGone {
		return row
	}
	return rec.goneRow(row, by)
}

// sortRows orders rows by Started, then Table, then PassID.
func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.Table, b.Table), strings.Compare(a.PassID, b.PassID))
	})
}
