package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// Read returns the rows of every pass with Finished at or after since, sorted
// by Started, then Table, then PassID: the rows of the pass files, those
// folded from dead passes' journals (RecoveredBy set) and those still in a
// journal (Pending). A row a pass recorded twice (its journal folded after
// it wrote its own file, or read while being removed) is returned once:
// its own file's, else a folded one, else a pending one; an outcome over
// an intent without one. Files whose key date (the pass's end) is before
// since's date are not read. A key under passes/ or journal/ that is not
// the ledger's, or an object that does not decode, is an error naming the
// key.
func Read(ctx context.Context, store objstore.Store, since time.Time) ([]Row, error) {
	var keys []string
	sinceDay := since.UTC().Format("2006/01/02")
	err := store.Walk(ctx, Prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			day, err := keyDay(o.Key)
			if err != nil {
				return err
			}
			if day >= sinceDay {
				keys = append(keys, o.Key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list ledger %s: %w", store.URI(), err)
	}
	var all []Row
	for _, k := range keys {
		rows, err := readFile(ctx, store, k)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	pending, err := readPending(ctx, store)
	if err != nil {
		return nil, err
	}
	var out []Row
	for _, r := range once(append(all, pending...)) {
		if !r.Finished.Before(since) {
			out = append(out, r)
		}
	}
	sortRows(out)
	return out, nil
}

// readPending reads every record of every journal as a pending row.
func readPending(ctx context.Context, store objstore.Store) ([]Row, error) {
	var keys []string
	err := store.Walk(ctx, JournalPrefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			_, name, ok := journalKey(o.Key)
			if !ok {
				return fmt.Errorf("ledger key %s: not a journal record; want %s<pass id>/lease or %s<pass id>/<32 hex digits>%s", o.Key, JournalPrefix, JournalPrefix, recordSuffix)
			}
			if name != journalLeaseName {
				keys = append(keys, o.Key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list ledger journals %s: %w", store.URI(), err)
	}
	var rows []Row
	for _, k := range keys {
		body, _, err := store.Get(ctx, k, maxRecordBytes)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // removed since the listing: its pass wrote its file, or it was folded
		}
		if err != nil {
			return nil, fmt.Errorf("read ledger %s: %w", k, err)
		}
		rec, err := decodeRecord(k, body)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rec.toRow("", true))
	}
	return rows, nil
}

// once keeps one row per pass, root and table across sources (a pass's
// own file, a folded journal, a pending journal), the best by rank. Rows
// of the same source are all kept.
func once(rows []Row) []Row {
	type id struct{ pass, root, table string }
	best := map[id]int{}
	for _, r := range rows {
		k := id{r.PassID, r.Root, r.Table}
		if b, seen := best[k]; !seen || rank(r) < b {
			best[k] = rank(r)
		}
	}
	var out []Row
	for _, r := range rows {
		if rank(r) == best[id{r.PassID, r.Root, r.Table}] {
			out = append(out, r)
		}
	}
	return out
}

// rank orders the copies of one row, best first: the pass's own, then a
// folded outcome, a pending outcome, a folded intent, a pending intent.
func rank(r Row) int {
	unfinished := strings.HasPrefix(r.Reason, string(outcome.ReasonUnfinished)+":")
	switch {
	case r.RecoveredBy == "" && !r.Pending:
		return 0
	case !unfinished && !r.Pending:
		return 1
	case !unfinished:
		return 2
	case !r.Pending:
		return 3
	}
	return 4
}

func readFile(ctx context.Context, store objstore.Store, key string) ([]Row, error) {
	body, _, err := store.Get(ctx, key, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read ledger %s: %w", key, err)
	}
	rows, err := decode(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("decode ledger %s: %w", key, err)
	}
	return rows, nil
}

// keyDay returns "YYYY/MM/DD" of a ledger key, checking its whole shape.
func keyDay(key string) (string, error) {
	bad := fmt.Errorf("ledger key %s: not a pass file; want %sYYYY/MM/DD/YYYYMMDDTHHMMSS.mmmZ-<pass id>.parquet", key, Prefix)
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return "", bad
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 {
		return "", bad
	}
	day := strings.Join(parts[:3], "/")
	d, err := time.Parse("2006/01/02", day)
	if err != nil {
		return "", bad
	}
	name, ok := strings.CutSuffix(parts[3], ".parquet")
	if !ok || len(name) < len(keyTimeLayout)+2 || name[len(keyTimeLayout)] != '-' {
		return "", bad
	}
	ts, err := time.Parse(keyTimeLayout, name[:len(keyTimeLayout)])
	if err != nil || ts.Format("2006/01/02") != d.Format("2006/01/02") || !fileIDValid(name[len(keyTimeLayout)+1:]) {
		return "", bad
	}
	return day, nil
}

// fileIDValid accepts a pass file's id: a pass id, or for a folded
// journal <dead pass id>.recovered-<folding pass id> (RecoveredKey).
func fileIDValid(id string) bool {
	if passIDPattern.MatchString(id) {
		return true
	}
	dead, by, ok := strings.Cut(id, recoveredInfix)
	return ok && passIDPattern.MatchString(dead) && passIDPattern.MatchString(by)
}
