package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

// A pass of many rows is encoded a batch at a time: the writer never holds
// more than one batch of rows, and the file, of several row groups, reads
// back whole and in order.
func TestWriterEncodesInBatches(t *testing.T) {
	w0 := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	s := memstore.New()
	w := NewWriter(s, "p1", w0)
	n := 2*writerBatch + 17
	for i := range n {
		w.Add(Row{Root: "file:///r", Table: fmt.Sprintf("t%06d", i), Action: "skipped", Reason: "not_due", Version: "v", Host: "h",
			Started: w0.Add(time.Duration(i) * time.Millisecond)})
		require.Less(t, w.enc.b.Field(0).Len(), writerBatch, "at most a batch of rows is held")
	}
	require.Equal(t, n, w.Len())
	key, err := w.Close(t.Context())
	require.NoError(t, err)
	require.Equal(t, Key("p1", w0.Add(time.Duration(n-1)*time.Millisecond)), key, "named by the latest row")
	rows, err := Read(t.Context(), s, w0.Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, rows, n)
	for i, r := range rows {
		require.Equal(t, fmt.Sprintf("t%06d", i), r.Table)
	}
}
