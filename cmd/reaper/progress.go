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

// retainProgress is retain --progress: the purge's lines for each table
// whose old versions are being removed (none for a table with nothing to
// do), and on a dry run a line per table as soon as it is planned.
type retainProgress struct {
	printer *progressPrinter
}

// progress is retain's --progress display, or nil.
func (o retainOptions) progress() *retainProgress {
	if !o.Progress {
		return nil
	}
	return &retainProgress{printer: newProgressPrinter(o.stderr(), o.now)}
}

// planned is a dry run's line for one table's plan, as soon as it is made:
// none for a table with nothing to do.
func (r *retainProgress) planned(root string, p retainJSON) {
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
