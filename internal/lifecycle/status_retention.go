package lifecycle

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns the retention columns of a status: with a policy, every
// live table the status scan hands over is read and planned, as
// PlanRetention plans it, by at most DefaultRetentionReads readers while
// the scan goes on, and the caller receives the rows in the scan's order,
// each live one with its plan's summary. What is held at once is the
// scan's window, statusPlanAhead rows waiting for the caller and the
// tables being read: a plan is summarized and dropped once computed,
// never kept for the whole root.

// statusPlanAhead is how many rows may wait for the caller, planned or
// being planned: enough to keep the readers busy while the caller writes.
const statusPlanAhead = 4 * DefaultRetentionReads

// RetentionSummary is what a policy would remove from one live table.
type RetentionSummary struct {
	// Result is planned, nothing_to_do, unsupported or failed; Reason
	// explains the last two.
	Result RetentionResult
	Reason string
	// Versions is how many versions of main the table has, Removed how
	// many the plan removes.
	Versions int
	Removed  int
	// Files and Bytes are the files the plan deletes and their size.
	Files int
	Bytes int64
	// TableBytes is the table's size (RetentionPlan.TableBytes).
	TableBytes int64
}

// summarize drops a plan's lists, keeping its counts.
func summarize(rp RetentionPlan) *RetentionSummary {
	return &RetentionSummary{Result: rp.Result, Reason: rp.Reason, Versions: rp.Versions,
		Removed: len(rp.Plan.Removed), Files: len(rp.Plan.Files), Bytes: rp.Plan.Bytes, TableBytes: rp.TableBytes}
}

// statusRow is one row on its way to the caller.
type statusRow struct {
	status TableStatus
	now    time.Time
	sum    *RetentionSummary
	done   chan struct{}
}

// EachStatusRetention is EachStatus with the summary of policy p's plan
// for each live table (nil for any other name), judged at the store's
// time the status was, and a row for the namespace catalog (__manifest/,
// StateCatalog) when the root has one, with its versions: it grows with
// every namespace operation and reaper never removes any. It reads every manifest of every live table: a
// listing of each table and a read per version, far more than a status.
// An error from fn stops it and is returned.
func (ns *Namespace) EachStatusRetention(ctx context.Context, names []string, p retention.Policy, fn func(s TableStatus, sum *RetentionSummary, now time.Time) error) error {
	if err := p.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rows := make(chan *statusRow, statusPlanAhead)
	readers := make(chan struct{}, DefaultRetentionReads)
	var wg sync.WaitGroup
	var scanErr error
	wg.Go(func() {
		defer close(rows)
		_, scanErr = ns.scan(ctx, nil, names, nameOrder, scanStatusCatalog, func(s TableStatus, now time.Time) error {
			row := &statusRow{status: s, now: now, done: make(chan struct{})}
			catalog := s.State == StateCatalog
			if notRetainable(s) != "" && !catalog {
				close(row.done)
			} else {
				select {
				case readers <- struct{}{}:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
				wg.Go(func() {
					defer func() { <-readers }()
					if catalog {
						row.sum = ns.catalogSummary(ctx)
					} else {
						row.sum = summarize(ns.planTable(ctx, s.Name, p, now, s.RetainRecord))
					}
					close(row.done)
				})
			}
			select {
			case rows <- row:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	})
	var first error
	for row := range rows {
		if first != nil {
			continue
		}
		<-row.done
		if err := ctx.Err(); err != nil {
			first = context.Cause(ctx)
			continue
		}
		if err := fn(row.status, row.sum, row.now); err != nil {
			first = err
			cancel(err)
		}
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return scanErr
}

// catalogSummary is the catalog's row of a status with versions: how many
// versions __manifest has (it grows with every namespace operation, and
// reaper never removes any), from one listing of its _versions/; never a
// plan.
func (ns *Namespace) catalogSummary(ctx context.Context) *RetentionSummary {
	sum := &RetentionSummary{Result: RetentionUnsupported, Reason: catalogNote}
	listed, err := lance.ListVersions(ctx, ns.store, CatalogDir+"/")
	if err != nil {
		sum.Result, sum.Reason = RetentionFailed, err.Error()
		return sum
	}
	for _, o := range listed {
		if _, ok := lance.ManifestVersion(strings.TrimPrefix(o.Key, lance.VersionsDir)); ok {
			sum.Versions++
		}
	}
	return sum
}
