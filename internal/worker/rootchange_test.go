package worker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
	"github.com/lance-reaper/reaper/internal/roots"
	"github.com/lance-reaper/reaper/internal/stack"
)

// A local root given as a release symlink is flipped to another directory
// holding a live table of the same name while a pass purges the table:
// the pass reports the table failed, root_changed, with a detail that
// says the root changed (the lease is lost too, through the moved root,
// and must not hide the cause), and the live table loses nothing.
func TestPassReportsARootChange(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	v1, v2, current := filepath.Join(base, "v1"), filepath.Join(base, "v2"), filepath.Join(base, "current")
	for _, d := range []string{v1, v2} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.Symlink(v1, current))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := stack.Open(ctx, current, nil, stack.Options{Logger: quiet})
	require.NoError(t, err)
	cs := objstoretest.NewClockStore(s)
	p := objstoretest.NewPauser(cs)
	now := time.Now()
	lancetest.Small(250).Put(t, cs, lifecycle.TableDir("big"))
	_, err = cs.Put(ctx, lifecycle.MarkerKey("big"), lifecycle.EncodeMarker(now, 7*day))
	require.NoError(t, err)
	live, err := stack.Open(ctx, v2, nil, stack.Options{Logger: quiet})
	require.NoError(t, err)
	lancetest.Small(250).Put(t, live, lifecycle.TableDir("big"))
	before := walkETags(t, live)
	cs.Advance(8 * day)

	frozen := p.PauseBefore(objstoretest.OpDeleteBatch, "big.lance/", 1)
	w := &Worker{
		Config:      baseConfig(),
		Open:        func(context.Context, roots.Root) (objstore.Store, error) { return p, nil },
		Roots:       func(context.Context) ([]roots.Root, error) { return []roots.Root{{URI: s.URI()}}, nil },
		Logger:      quiet,
		Now:         func() time.Time { return now.Add(8 * day) },
		Owner:       "test/1",
		DeleteBatch: 100, // several batches
	}
	done := passAsync(t, w)
	<-frozen.Reached()
	require.NoError(t, os.Symlink(v2, current+".next"))
	require.NoError(t, os.Rename(current+".next", current))
	frozen.Release()
	rep := <-done

	require.Equal(t, before, walkETags(t, live), "the live table in the directory the root names now")
	require.Equal(t, "failed/root_changed", byTable(rep, 0)["big"])
	d := rep.Roots[0].Decisions[0]
	require.True(t, strings.HasPrefix(d.Detail, "the root changed: "+current), "detail: %s", d.Detail)
	require.Equal(t, outcome.ResultPartial, rep.Result())
}

// walkETags maps every key of s to its ETag.
func walkETags(t *testing.T, s objstore.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.Walk(context.Background(), "", func(objs []objstore.Object) error {
		for _, o := range objs {
			out[o.Key] = o.ETag
		}
		return nil
	}))
	return out
}
