//go:build !fuzzonly

package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// TestStatusShowsWriteAfterDrop: a due table whose manifests a writer
// changed after its drop (LanceDB ignores markers) is skipped by every
// purge as a conflict; status says so, with what to do, where before it
// showed a plain "due". A table dropped cleanly, and one not due yet, are
// not listed inside.
func TestStatusShowsWriteAfterDrop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		ctx := context.Background()
		c := &clock{}
		ns := newNS(t, s, c)
		lanceTable(t, s, "clean", 2)
		_, err := ns.Drop(ctx, "clean", time.Second)
		require.NoError(t, err)
		// Dropped an hour before its files were written: a writer wrote
		// into it after the drop.
		lanceTable(t, s, "rewritten", 2)
		_, err = s.Put(ctx, "rewritten.deleted", EncodeMarker(c.Now().Add(-time.Hour), 0))
		require.NoError(t, err)
		lanceTable(t, s, "later", 2)
		_, err = s.Put(ctx, "later.deleted", EncodeMarker(c.Now().Add(-time.Hour), 30*day))
		require.NoError(t, err)
		c.Advance(2 * time.Second) // clean's TTL, and S3's second of resolution

		st := statusOf(t, ns, "rewritten")
		require.Equal(t, StateSoftDeleted, st.State)
		require.True(t, strings.HasPrefix(st.Problem, `written after its drop: "rewritten.lance/_versions/`), st.Problem)
		require.Contains(t, st.Problem, "after the drop (fence ")
		require.True(t, strings.HasSuffix(st.Problem, "; "+writtenAfterDropFix), st.Problem)
		_, err = ns.Purge(ctx, "rewritten", PurgeOptions{})
		require.ErrorIs(t, err, ErrConflict, "what status warns of")

		all, err := ns.List(ctx)
		require.NoError(t, err)
		problems := map[string]string{}
		for _, s := range all {
			problems[s.Name] = s.Problem
		}
		require.Equal(t, st.Problem, problems["rewritten"], "List says it too")
		require.Empty(t, problems["clean"], "dropped after its last write")
		require.Empty(t, problems["later"], "not due: a pass does not try it yet")
	})
}
