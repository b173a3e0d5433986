//go:build !fuzzonly

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
)

// A live table on a local disk with a symbolic link in place of one of
// its directories is refused by retention (unsupported, naming the link),
// touched by nothing, and the link never followed: _deletions/ linked
// away hid the deletion files the removed versions leave behind, which a
// run reported "cleaned" without; _refs/tags/ linked away hid the tag on
// version 2, which a run then removed with its files. The plan says
// unsupported too.
func TestRetainRefusesALinkedDirectory(t *testing.T) {
	for _, sub := range []string{"_deletions", "_refs/tags"} {
		t.Run(sub, func(t *testing.T) {
			ctx := context.Background()
			w, dir := localWorld(t)
			p := w.proc("retainer", 0)
			putLanceFixture(t, w.store, "t")
			policy := fixturePolicy(t, w.store, "t")
			at := filepath.Join(dir, "t.lance", filepath.FromSlash(sub))
			moved := filepath.Join(t.TempDir(), "moved")
			require.NoError(t, os.Rename(at, moved))
			require.NoError(t, os.Symlink(moved, at))
			outside, err := os.ReadDir(moved)
			require.NoError(t, err)
			require.NotEmpty(t, outside)
			before := snapshot(t, w.store)

			plans, err := p.ns.PlanRetention(ctx, policy)
			require.NoError(t, err)
			require.Len(t, plans, 1)
			require.Equal(t, RetentionUnsupported, plans[0].Result)
			require.Contains(t, plans[0].Reason, sub+" is not a directory (a symbolic link")

			res, err := p.ns.Retain(ctx, "t", RetainOptions{Policy: policy})
			require.ErrorIs(t, err, lance.ErrUnsupported)
			require.ErrorContains(t, err, sub+" is not a directory (a symbolic link")
			require.Empty(t, res.Outcome, "not cleaned")
			after := snapshot(t, w.store)
			delete(after, LockKey("t"))
			require.Equal(t, before, after, "nothing deleted, no record written")
			still, err := os.ReadDir(moved)
			require.NoError(t, err)
			require.Len(t, still, len(outside), "the link's target untouched")
		})
	}
}
