package ledger

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Prefix is the key prefix under which every pass file lives.
const Prefix = "passes/"

// MaxFileBytes caps the read of one pass file: a row takes well under 1 KiB
// compressed, so this holds a pass over hundreds of thousands of tables,
// while an object that is not a pass file cannot exhaust memory.
const MaxFileBytes = 256 << 20

// keyTimeLayout is RFC 3339 basic format with milliseconds: fixed width, so
// keys sort by time, and free of ":".
const keyTimeLayout = "20060102T150405.000Z"

// passIDPattern keeps a pass id to one safe key segment.
var passIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// writerBatch is how many rows the writer encodes at a time: each batch is
// a row group of the pass's file, so the rows held in memory stay this
// few however many tables a pass decides (a root of a million names makes
// a million rows; held as rows they took some 300 MB).
const writerBatch = 8192

// Writer encodes the rows of one pass as they come, a batch at a time, into
// one Parquet file it writes on Close. Add is safe for concurrent use. What
// it holds is the compressed file so far (a few dozen bytes a row) and one
// batch of rows.
type Writer struct {
	store   objstore.Store
	passID  string
	started time.Time

	mu     sync.Mutex
	enc    *streamEncoder
	n      int
	end    time.Time // the latest Finished so far
	err    error     // the first encoding error, returned by Close
	closed bool
}

// NewWriter starts the ledger of pass passID, which started at started.
// passID must be 1 to 128 letters, digits, '.', '_' or '-' (Close checks).
func NewWriter(store objstore.Store, passID string, started time.Time) *Writer {
	return &Writer{store: store, passID: passID, started: started, end: started}
}

// Add records one row. An empty PassID is set to the writer's, a zero
// Started to the pass start and a zero Finished to Started.
func (w *Writer) Add(r Row) {
	if r.PassID == "" {
		r.PassID = w.passID
	}
	if r.Started.IsZero() {
		r.Started = w.started
	}
	if r.Finished.IsZero() {
		r.Finished = r.Started
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	if w.enc == nil {
		if w.enc, w.err = newStreamEncoder(writerBatch); w.err != nil {
			return
		}
	}
	w.n++
	if r.Finished.After(w.end) {
		w.end = r.Finished
	}
	w.err = w.enc.add(r)
}

// Len is the number of rows added so far.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Close finishes the file (possibly of no rows) and writes it; it returns
// the key written. Rows added after Close are lost; a second Close is an
// error.
func (w *Writer) Close(ctx context.Context) (string, error) {
	w.mu.Lock()
	enc, closed, err, end := w.enc, w.closed, w.err, w.end
	w.closed = true
	w.mu.Unlock()
	if closed {
		return "", fmt.Errorf("close ledger of pass %s: already closed", w.passID)
	}
	if !passIDPattern.MatchString(w.passID) {
		return "", fmt.Errorf("close ledger of pass %q: pass id must be 1 to 128 letters, digits, '.', '_' or '-'", w.passID)
	}
	if err == nil && enc == nil {
		enc, err = newStreamEncoder(writerBatch)
	}
	var body []byte
	if err == nil {
		body, err = enc.finish(passMeta(w.passID, w.started, ""))
	}
	if err != nil {
		return "", fmt.Errorf("encode ledger of pass %s: %w", w.passID, err)
	}
	key := Key(w.passID, end)
	if _, err := w.store.Put(ctx, key, body); err != nil {
		return "", fmt.Errorf("write ledger %s: %w", key, err)
	}
	return key, nil
}

// passEnd is the latest Finished of the rows, or started without rows.
func passEnd(started time.Time, rows []Row) time.Time {
	end := started
	for _, r := range rows {
		if r.Finished.After(end) {
			end = r.Finished
		}
	}
	return end
}

// Key is the object key of the file of pass passID that ended at end:
// passes/YYYY/MM/DD/YYYYMMDDTHHMMSS.mmmZ-<passID>.parquet, in UTC.
func Key(passID string, end time.Time) string {
	end = end.UTC()
	return Prefix + end.Format("2006/01/02/") + end.Format(keyTimeLayout) + "-" + passID + ".parquet"
}
