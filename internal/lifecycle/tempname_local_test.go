//go:build !fuzzonly

package lifecycle

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A table file named exactly like the local store's temp files
// (.reaper-tmp- and 26 letters and digits: a user's file, or a copy of a
// root that held one) is the table's like any other: the walk sees it, the
// identity fence checks it and the purge deletes it, so the purge
// finishes. reaper never writes inside a table, so no temp file of its own
// can be there.
func TestAdversaryTableFileNamedLikeATempFile(t *testing.T) {
	for name, rel := range map[string]string{
		"file in data/":       "data/.reaper-tmp-" + rand.Text(),
		"file at the top":     ".reaper-tmp-" + rand.Text(),
		"directory in data/":  "data/.reaper-tmp-" + rand.Text() + "/part-0.lance",
		"written after drop?": "_versions/.reaper-tmp-" + rand.Text(),
	} {
		t.Run(name, func(t *testing.T) {
			w, dir := localWorld(t)
			p := w.proc("purger", 0)
			lanceTable(t, w.store, "t", 3)
			writeFiles(t, filepath.Join(dir, "t.lance"), map[string]string{rel: "a user's bytes"})
			if name == "written after drop?" {
				_, err := p.ns.Drop(context.Background(), "t", time.Hour)
				require.NoError(t, err)
				// Written after the drop: the fence must see it and refuse.
				require.NoError(t, os.Chtimes(filepath.Join(dir, "t.lance", rel), time.Now().Add(time.Hour), time.Now().Add(time.Hour)))
				w.advance(time.Hour + time.Second)
				_, err = p.ns.Purge(context.Background(), "t", PurgeOptions{})
				require.ErrorIs(t, err, ErrConflict, "the identity fence sees the file")
				require.FileExists(t, filepath.Join(dir, "t.lance", rel))
				return
			}
			_, err := p.ns.Drop(context.Background(), "t", time.Hour)
			require.NoError(t, err)
			w.advance(time.Hour + time.Second)
			res, err := p.ns.Purge(context.Background(), "t", PurgeOptions{})
			require.NoError(t, err)
			require.Equal(t, OutcomePurged, res.Outcome)
			_, err = os.Lstat(filepath.Join(dir, "t.lance"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing of the table is left")
		})
	}
}
