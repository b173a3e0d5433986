package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusNotesWriteAfterDrop: the purge fixture's "conflict" table,
// written after its drop, is skipped by every pass; status's NOTE says so
// and what to do, and -o json carries it as the problem.
func TestStatusNotesWriteAfterDrop(t *testing.T) {
	f := newPurgeFixture(t)
	o := statusOptions{storeOptions: f.b.opts}
	o.setClock(f.b.clock, f.now)
	var out bytes.Buffer
	require.NoError(t, runStatus(context.Background(), o, &out))
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "conflict ") {
			line = l
		}
	}
	require.Contains(t, line, `written after its drop: "conflict.lance/_versions/`, out.String())
	require.Contains(t, line, "every purge skips it as a conflict and deletes nothing: if an application uses the table, revive it")

	out.Reset()
	o.Output = formatJSON
	require.NoError(t, runStatus(context.Background(), o, &out))
	require.Contains(t, out.String(), `"problem": "written after its drop: `)
}
