package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// A dead pass's purge intent whose table is gone from its root (marker and
// directory both, as TableGone reports) folds as purged, recovered, with
// the intent's objects and a reason saying only the outcome was lost.
// Everything else folds as before: a purge intent whose table is still
// there, or whose state cannot be read, stays failed unfinished; a version
// retention's intent (no marker in its row) is never asked about; an
// outcome is its row as decided. Before, every intent folded as unfinished.
func TestRecoverAGoneTableIsPurged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		j := newJournaled(s)
		jr := j.journal("pass-dead", t0)
		rows := map[string]ledger.Row{}
		for i, name := range []string{"gone", "present", "unknown", "done"} {
			rows[name] = tableRow("pass-dead", "/db", name, t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, jr.Intent(t.Context(), rows[name], 7, 700, false))
		}
		require.NoError(t, jr.Outcome(t.Context(), purgedRow(rows["done"], 7)))
		live := ledger.Row{PassID: "pass-dead", Root: "/db", Table: "live", Started: t0, Finished: t0, Version: "v1", Host: "h"}
		require.NoError(t, jr.Intent(t.Context(), live, 3, 30, false))
		j.die()

		var mu sync.Mutex
		var asked []string
		opts := j.opts("pass-next", nil)
		opts.TableGone = func(_ context.Context, root, table string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, "/db", root)
			asked = append(asked, table)
			switch table {
			case "present":
				return false, nil
			case "unknown":
				return false, errors.New("root unreachable (test)")
			}
			return true, nil
		}
		_, err := ledger.Recover(t.Context(), j.clock, "pass-next", opts)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"gone", "present", "unknown"}, asked, "only purge intents without an outcome are asked about")

		read, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		byTable := map[string]ledger.Row{}
		for _, r := range read {
			require.Equal(t, "pass-next", r.RecoveredBy)
			byTable[r.Table] = r
		}
		g := byTable["gone"]
		require.Equal(t, string(outcome.Purged), g.Action)
		require.True(t, strings.HasPrefix(g.Reason, string(outcome.ReasonDue)+": recovered: "), g.Reason)
		require.Contains(t, g.Reason, "the table's marker and directory were both gone, so the purge finished")
		require.Empty(t, g.Error)
		require.Equal(t, int64(7), g.Objects)
		require.Equal(t, int64(700), g.Bytes)
		for _, name := range []string{"present", "unknown", "live"} {
			r := byTable[name]
			require.Equal(t, string(outcome.Failed), r.Action, name)
			require.True(t, strings.HasPrefix(r.Reason, string(outcome.ReasonUnfinished)+": "), "%s: %s", name, r.Reason)
			require.Zero(t, r.Objects, name)
		}
		require.Equal(t, string(outcome.Purged), byTable["done"].Action)
		require.Equal(t, "due: purged", byTable["done"].Reason, "an outcome as decided")
	})
}
