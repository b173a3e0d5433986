package worker

import (
	"cmp"
	"log/slog"
	"sync"
	"time"
)

// Progress is one table's deletes in flight, a purge's or version
// retention's, for a progress display (reaper purge --progress). Total is
// zero until the table has been walked (a purge) or planned (retention).
type Progress struct {
	Root, Table              string
	Objects, Bytes           int64 // deleted so far
	TotalObjects, TotalBytes int64 // to delete, once walked or planned
	Started                  time.Time
	// Retention: version retention of a live table, not a purge.
	Retention bool
	// Done is set on the last event of the table, whatever its outcome.
	Done bool
}

// tableProgress reports one table's deletes: every batch to OnProgress,
// and a log line (msg) at most every ProgressEvery.
type tableProgress struct {
	p   *pass
	log *slog.Logger
	msg string

	mu   sync.Mutex
	last time.Time
	pr   Progress
}

func (p *pass) newTableProgress(root, table string, started time.Time, log *slog.Logger, msg string) *tableProgress {
	return &tableProgress{p: p, log: log, msg: msg, last: started, pr: Progress{Root: root, Table: table, Started: started}}
}

func (tp *tableProgress) report(update func(*Progress)) {
	if tp.p.w.OnProgress == nil {
		return
	}
	tp.mu.Lock()
	update(&tp.pr)
	ev := tp.pr
	tp.mu.Unlock()
	tp.p.w.OnProgress(ev)
}

// total is what the table is to lose, once known.
func (tp *tableProgress) total(objects, bytes int64) {
	tp.report(func(pr *Progress) { pr.TotalObjects, pr.TotalBytes = objects, bytes })
}

// deleted is the running total after a delete batch.
func (tp *tableProgress) deleted(objects, bytes int64) {
	tp.report(func(pr *Progress) { pr.Objects, pr.Bytes = objects, bytes })
	tp.mu.Lock()
	defer tp.mu.Unlock()
	every := cmp.Or(tp.p.w.ProgressEvery, 10*time.Second)
	if t := tp.p.now(); t.Sub(tp.last) >= every {
		tp.last = t
		elapsed := t.Sub(tp.pr.Started).Seconds()
		tp.log.Info(tp.msg, "objects", objects, "bytes", bytes, "objects_per_second", int64(float64(objects)/max(elapsed, 0.001)))
	}
}

// done is the table's last event.
func (tp *tableProgress) done(objects, bytes int64) {
	tp.report(func(pr *Progress) { pr.Objects, pr.Bytes, pr.Done = objects, bytes, true })
}
