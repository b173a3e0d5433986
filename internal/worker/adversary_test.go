package worker

// The adversary's scenarios a whole pass must survive (docs/SAFETY.md): a
// PAUSE created mid-pass, a lease lost mid-delete, a link where a table
// should be. Frozen at pause points of a Pauser, resumed by the test.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// pausePass wraps root 0 of f in a Pauser and returns it.
func (f *fixture) pausePass() *objstoretest.Pauser {
	p := objstoretest.NewPauser(f.stores[f.uris[0]])
	f.stores[f.uris[0]] = p
	return p
}

// Scenario 9: a PAUSE created while the first of ten tables is being
// purged stops that table before its next batch and every other table
// before its first: the switch is re-read before every batch, and a
// folder _reaper/PAUSE/ (an S3 console folder, a mkdir) counts.
func TestPauseCreatedMidPassStopsEveryTable(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "a", 150, 1, 7*day)
		names := []string{"a"}
		for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			f.table(0, n, 2, 1, 7*day)
			names = append(names, n)
		}
		p := f.pausePass()
		frozen := p.PauseBefore(objstoretest.OpDeleteBatch, "a.lance/", 1)
		cfg := baseConfig()
		cfg.Limits.TableConcurrency = 1
		w := f.worker(cfg, 8*day)
		w.DeleteBatch = 100 // a's 150 data files take several batches
		done := passAsync(t, w)
		<-frozen.Reached()
		if backend.Name == objstoretest.Local.Name {
			root := strings.TrimPrefix(f.uris[0], "file://")
			require.NoError(t, os.MkdirAll(filepath.Join(root, "_reaper", "PAUSE"), 0o755), "mkdir _reaper/PAUSE")
		} else {
			_, err := f.store(0).Put(context.Background(), "_reaper/PAUSE/by-operator", nil)
			require.NoError(t, err)
		}
		frozen.Release()
		rep := <-done
		got := byTable(rep, 0)
		require.Equal(t, "skipped/paused", got["a"], "the table in progress stops before its next batch")
		for _, n := range names[1:] {
			require.Equal(t, "skipped/paused", got[n], "%s never starts", n)
			require.NotEmpty(t, f.keys(0, n+".lance/"), "%s keeps its data", n)
		}
		st, err := lifecycleStatus(f, "a")
		require.NoError(t, err)
		require.Equal(t, lifecycle.StatePartiallyPurged, st.State, "a keeps its marker and commit; the next pass finishes it")
	}, objstoretest.Shared()...)
}

// Scenario 12: a lease lost in the middle of the deletes (the process
// froze past its deadline) is a failure with reason lease_lost on every
// backend, so an alert fires; the table is finishable by the next pass.
func TestLostLeaseMidDeleteIsAFailure(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, backend objstoretest.Backend) {
		f := newFixture(t, backend, 1)
		f.table(0, "big", 250, 1, 7*day)
		p := f.pausePass()
		frozen := p.PauseBefore(objstoretest.OpDeleteBatch, "big.lance/", 1)
		var skew atomic.Int64
		cfg := baseConfig()
		w := f.worker(cfg, 8*day)
		w.DeleteBatch = 100 // big's 250 data files take several batches
		w.LeaseClock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		done := passAsync(t, w)
		<-frozen.Reached()
		skew.Store(int64(cfg.Defaults.LeaseTTL.D())) // frozen past its deadline
		frozen.Release()
		rep := <-done
		require.Equal(t, "failed/lease_lost", byTable(rep, 0)["big"])
		require.Equal(t, outcome.ResultPartial, rep.Result(), "a lost lease is not a success")
		require.Positive(t, rep.Totals().Failed)

		f.stores[f.uris[0]] = p.Unwrap()
		later := 8*day + cfg.Defaults.LeaseTTL.D() + cfg.Defaults.SkewAllowance.D() + 2*time.Second
		rep, err := f.worker(cfg, later).Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, "purged/due", byTable(rep, 0)["big"], "the next pass takes the lease over and finishes")
		require.Empty(t, f.keys(0, "big."))
	}, objstoretest.Shared()...)
}

// Scenario 4, a whole pass: a symlinked <name>.lance with a marker beside
// it is reported (failed, not_a_table) and never entered, whatever the
// marker says; the link's target is untouched.
func TestPassNeverEntersALinkedTable(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	root := strings.TrimPrefix(f.uris[0], "file://")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "evil.lance")))
	_, err := f.store(0).Put(context.Background(), "evil.deleted", lifecycle.EncodeMarker(time.Now(), time.Millisecond))
	require.NoError(t, err)
	f.table(0, "old", 1, 1, 7*day)
	cfg := baseConfig()
	cfg.Safety.AllowShortTTL = true
	rep, err := f.worker(cfg, 8*day).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"evil": "failed/not_a_table", "old": "purged/due"}, byTable(rep, 0))
	b, err := os.ReadFile(filepath.Join(outside, "precious"))
	require.NoError(t, err)
	require.Equal(t, "keep", string(b))
	_, err = f.store(0).Head(context.Background(), "evil.deleted")
	require.NoError(t, err, "its marker stays for an operator")
}

// passAsync runs one pass of w in the background.
func passAsync(t *testing.T, w *Worker) <-chan *Report {
	done := make(chan *Report, 1)
	go func() {
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		done <- rep
	}()
	return done
}

// lifecycleStatus reads one table's status from root 0.
func lifecycleStatus(f *fixture, name string) (lifecycle.TableStatus, error) {
	var s objstore.Store = f.stores[f.uris[0]]
	if p, ok := s.(*objstoretest.Pauser); ok {
		s = p.Unwrap()
	}
	ns, err := lifecycle.New(s, lifecycle.Options{})
	if err != nil {
		return lifecycle.TableStatus{}, err
	}
	st, err := ns.Status(context.Background(), name)
	if err != nil {
		return lifecycle.TableStatus{}, err
	}
	return st[0], nil
}
