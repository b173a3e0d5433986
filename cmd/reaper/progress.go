package main

import (
	"fmt"
	"github.com/lance-reaper/reaper"
	"io"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/worker"
)

// progressEvery is how often --progress prints a table's line.
const progressEvery = time.Second

// progressPrinter is purge --progress: one line per table on stderr at most
// every progressEvery while it is deleted, and one when it is done.
type progressPrinter struct {
	w   io.Writer
	now func() time.Time

	mu   sync.Mutex
	last map[string]time.Time // root + table -> when its last line went out
}

func newProgressPrinter(w io.Writer, now func() time.Time) *progressPrinter {
	return &progressPrinter{w: w, now: now, last: map[string]time.Time{}}
}

func (p *progressPrinter) event(ev worker.Progress) {
	if ev.TotalObjects == 0 && !ev.Done {
		return // not walked yet: no total to show
	}
	now := p.now()
	key := ev.Root + "\x00" + ev.Table
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.last[key]; ok && !ev.Done && now.Sub(last) < progressEvery {
		return
	}
	p.last[key] = now
	fmt.Fprintln(p.w, progressLine(ev, now))
}

// progressLine says how far one table's purge (or version retention) is: objects done of the
// total, bytes, the rate so far and the time left at that rate.
func progressLine(ev worker.Progress, now time.Time) string {
	elapsed := now.Sub(ev.Started)
	head := fmt.Sprintf("progress: %s (%s): ", displayName(ev.Table), safeText(ev.Root))
	if ev.Retention {
		head = fmt.Sprintf("progress: %s (%s), version retention: ", displayName(ev.Table), safeText(ev.Root))
	}
	if ev.Done {
		return head + fmt.Sprintf("done, %d objects, %s in %s", ev.Objects, humanBytes(ev.Bytes), formatDuration(elapsed.Round(time.Second)))
	}
	line := head + fmt.Sprintf("%d/%d objects (%d%%), %s of %s", ev.Objects, ev.TotalObjects,
		ev.Objects*100/max(ev.TotalObjects, 1), humanBytes(ev.Bytes), humanBytes(ev.TotalBytes))
	if elapsed <= 0 || ev.Objects == 0 {
		return line + ", rate not known yet"
	}
	rate := float64(ev.Objects) / elapsed.Seconds()
	eta := time.Duration(float64(ev.TotalObjects-ev.Objects) / rate * float64(time.Second))
	return line + fmt.Sprintf(", %.0f objects/s, ETA %s", rate, formatDuration(eta.Round(time.Second)))
}

// retainProgress is retain --progress: the purge's lines, for each table
// whose old versions are being removed (none for a table with nothing to
// do).
type retainProgress struct {
	printer *progressPrinter
	now     func() time.Time

	mu      sync.Mutex
	current worker.Progress
	started bool
}

// progress is retain's --progress display, or nil.
func (o retainOptions) progress() *retainProgress {
	if !o.Progress {
		return nil
	}
	return &retainProgress{printer: newProgressPrinter(o.stderr(), o.now), now: o.now}
}

// planned is a dry run's line for one table's plan, as soon as it is made:
// none for a table with nothing to do.
func (r *retainProgress) planned(root string, p reaper.RetentionPlan) {
	head := fmt.Sprintf("progress: %s (%s), version retention: ", displayName(p.Name), safeText(root))
	var line string
	switch p.Result {
	case reaper.RetentionPlanned:
		line = fmt.Sprintf("planned: would remove %d of %d versions, %d files, %s", len(p.Removed), p.Versions, len(p.Files), humanBytes(p.Bytes))
	case reaper.RetentionNothingToDo:
		return
	default:
		line = p.Result + ": " + safeText(p.Reason)
	}
	r.printer.mu.Lock()
	defer r.printer.mu.Unlock()
	fmt.Fprintln(r.printer.w, head+line)
}

// table starts table's display: the callbacks its run reports through.
func (r *retainProgress) table(root, table string) (progress, planned func(objects, bytes int64)) {
	r.mu.Lock()
	r.current = worker.Progress{Root: root, Table: table, Started: r.now(), Retention: true}
	r.started = false
	r.mu.Unlock()
	planned = func(objects, bytes int64) {
		r.event(func(p *worker.Progress) { p.TotalObjects, p.TotalBytes = objects, bytes }, true)
	}
	progress = func(objects, bytes int64) {
		r.event(func(p *worker.Progress) { p.Objects, p.Bytes = objects, bytes }, false)
	}
	return progress, planned
}

// done ends the table's display, if it deleted anything.
func (r *retainProgress) done(objects, bytes int64) {
	r.event(func(p *worker.Progress) { p.Objects, p.Bytes, p.Done = objects, bytes, true }, false)
}

func (r *retainProgress) event(update func(*worker.Progress), start bool) {
	r.mu.Lock()
	if start {
		r.started = true
	}
	if !r.started {
		r.mu.Unlock()
		return
	}
	update(&r.current)
	ev := r.current
	r.mu.Unlock()
	r.printer.event(ev)
}
