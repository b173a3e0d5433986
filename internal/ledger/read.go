package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Read returns the rows of every pass with Finished at or after since, sorted
// by Started, then Table, then PassID. Files whose key date (the pass's end)
// is before since's date are not read. A key under passes/ that is not a
// ledger file, or a file that does not decode, is an error naming the key.
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
	var out []Row
	for _, k := range keys {
		rows, err := readFile(ctx, store, k)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if !r.Finished.Before(since) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int {
		return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.Table, b.Table), strings.Compare(a.PassID, b.PassID))
	})
	return out, nil
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
	if err != nil || ts.Format("2006/01/02") != d.Format("2006/01/02") || !passIDPattern.MatchString(name[len(keyTimeLayout)+1:]) {
		return "", bad
	}
	return day, nil
}
