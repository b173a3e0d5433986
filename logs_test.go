package reaper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/stack"
)

// failFirstBatch fails the first batch delete with a transient error (the
// fence's request deadline, which the retry layer retries on every backend)
// and passes everything else through.
type failFirstBatch struct {
	objstore.Store
	failed atomic.Bool
}

func (f *failFirstBatch) DeleteBatch(ctx context.Context, keys []string) error {
	if f.failed.CompareAndSwap(false, true) {
		return fmt.Errorf("injected: %w", objstore.ErrRequestDeadline)
	}
	return f.Store.DeleteBatch(ctx, keys)
}

// syncBuffer is a log sink safe for the pass's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// jsonLines parses JSON log lines, failing on a key that appears twice in
// one line (encoding/json would silently keep the last).
func jsonLines(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(text) {
		dec := json.NewDecoder(strings.NewReader(line))
		_, err := dec.Token()
		require.NoError(t, err, line)
		m := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err, line)
			key := k.(string)
			require.NotContains(t, m, key, "key %q twice in %s", key, line)
			var v any
			require.NoError(t, dec.Decode(&v), line)
			m[key] = v
		}
		out = append(out, m)
	}
	return out
}

// Every line about a table's work in a pass names the table and the pass:
// the store's retry line (logged by the store stack, which knows neither)
// and the lease's lines (the lease object under "lease", not "key") get
// them from the context the worker and the lifecycle pass down.
func TestPassLogLinesNameTableAndPass(t *testing.T) {
	ctx := context.Background()
	r := facadeRoot{Root: objstoretest.Local.NewRoot(t)}
	writeTable(t, r, "due", 3)
	dropDue(t, openFacade(t, r), r, "due")

	var sink syncBuffer
	log := slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fault := &failFirstBatch{}
	ctx = stack.WithWrapBackend(ctx, func(s objstore.Store) objstore.Store { fault.Store = s; return fault })
	rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
		Roots:    []reaper.Root{{URI: r.URI}},
		Settings: map[string]string{"safety.allow_short_ttl": "true"},
		Logger:   log,
	})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Totals().Purged, "the retried batch went through")
	require.True(t, fault.failed.Load(), "the fault fired")

	seen := map[string]bool{}
	for _, l := range jsonLines(t, sink.buf.String()) {
		msg, _ := l["msg"].(string)
		switch msg {
		case "store request retried", "acquired", "released":
		default:
			continue
		}
		seen[msg] = true
		require.Equal(t, "due", l["table"], "%s: %v", msg, l)
		require.Equal(t, rep.PassID, l["pass_id"], "%s: %v", msg, l)
		require.Equal(t, rep.Roots[0].Root, l["root"], "%s: %v", msg, l)
		if msg == "store request retried" {
			require.Contains(t, l["key"], "due.lance/", "the retried request's object: %v", l)
		} else {
			require.NotContains(t, l, "key", "%s: %v", msg, l)
			require.Equal(t, "due.reaper-lock", l["lease"], "%s: %v", msg, l)
		}
	}
	require.Equal(t, map[string]bool{"store request retried": true, "acquired": true, "released": true}, seen,
		"log:\n%s", sink.buf.String())
}
