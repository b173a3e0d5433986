package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/roots"
)

// opCounts counts a store's calls that touch keys under a prefix, by kind.
type opCounts struct {
	objstore.Store
	prefix string
	mu     *sync.Mutex
	n      map[string]int
}

func (c opCounts) count(op, key string) {
	if strings.HasPrefix(key, c.prefix) {
		c.mu.Lock()
		c.n[op]++
		c.mu.Unlock()
	}
}

func (c opCounts) List(ctx context.Context, prefix string, fn func(objstore.Page) error) error {
	c.count("list", prefix)
	return c.Store.List(ctx, prefix, fn)
}

func (c opCounts) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	c.count("list", prefix)
	return c.Store.Walk(ctx, prefix, fn)
}

func (c opCounts) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	c.count("get", key)
	return c.Store.Get(ctx, key, limit)
}

func (c opCounts) Head(ctx context.Context, key string) (objstore.Object, error) {
	c.count("head", key)
	return c.Store.Head(ctx, key)
}

// A long-running process remembers what its last plan of an idle table
// showed (retain_memo.go): while every version and file is younger than its
// age limit the next pass sends nothing for the table; later, while the
// table's _versions/ and _refs/ list as before, it sends those two
// listings and reads no manifest; once a ref changed it reads the table
// again, listings afresh but no manifest it has read. Every such pass says
// nothing_to_do, as a full read would.
func TestRetentionRemembersAnIdleTable(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	cfg := retentionOn()
	cfg.Retention.KeepVersions = 10 // more than the table has: idle for good
	w := f.worker(cfg, 0)
	counts := opCounts{prefix: lifecycle.TableDir("events"), mu: &sync.Mutex{}, n: map[string]int{}}
	open := w.Open
	w.Open = func(ctx context.Context, r roots.Root) (objstore.Store, error) {
		s, err := open(ctx, r)
		counts.Store = s
		return counts, err
	}
	pass := func() map[string]int {
		t.Helper()
		counts.mu.Lock()
		clear(counts.n)
		counts.mu.Unlock()
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"events": "skipped/nothing_to_do"}, retained(rep, 0))
		counts.mu.Lock()
		defer counts.mu.Unlock()
		return maps(counts.n)
	}

	first := pass()
	require.Positive(t, first["get"], "the first pass reads every manifest")

	require.Empty(t, pass(), "every version younger than older_than: nothing sent for the table")

	f.at(2 * time.Hour) // every version past the cutoff, kept by keep_versions
	require.Equal(t, map[string]int{"list": 2}, pass(), "_versions/ and _refs/ listed, nothing read")

	require.NoError(t, f.store(0).Delete(context.Background(), lifecycle.TableDir("events")+"_refs/tags/release.json"))
	again := pass()
	require.Greater(t, again["list"], 2, "a ref changed: the table is listed again")
	require.Zero(t, again["get"], "no manifest read twice (and the one tag is gone)")
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// failReads refuses every read under a prefix, as a store that cannot read
// one table does.
type failReads struct {
	objstore.Store
	prefix string
}

func (f failReads) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if strings.HasPrefix(key, f.prefix) {
		return nil, objstore.Object{}, errInjected
	}
	return f.Store.Get(ctx, key, limit)
}

var errInjected = errors.New("read refused (injected)")

// A table of the root that cannot be read might be a shallow clone of any
// other: what it reads of them is unknown, so no table of the root loses a
// file this pass (skipped, io, saying why); the next pass that reads it
// cleans them.
func TestRetentionDeletesNothingWhileATableCannotBeRead(t *testing.T) {
	f := newFixture(t, objstoretest.Local, 1)
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("events"))
	lancetest.LanceDB(t, f.store(0), lifecycle.TableDir("unread"))
	w := f.worker(retentionOn(), 2*time.Hour)
	open := w.Open
	w.Open = func(ctx context.Context, r roots.Root) (objstore.Store, error) {
		s, err := open(ctx, r)
		return failReads{Store: s, prefix: lifecycle.TableDir("unread") + "_versions/"}, err
	}
	before := f.keys(0, lifecycle.TableDir("events"))
	rep, err := w.Pass(context.Background(), nil)
	require.NoError(t, err)
	got := retained(rep, 0)
	require.Equal(t, "failed/io", got["unread"])
	require.Equal(t, "skipped/io", got["events"])
	require.Contains(t, rep.Roots[0].Retention[0].Detail, "unread could not be read")
	require.Equal(t, before, f.keys(0, lifecycle.TableDir("events")), "nothing deleted")

	again, err := f.worker(retentionOn(), 2*time.Hour).Pass(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "cleaned/old_versions", retained(again, 0)["events"], "read again, the table is cleaned")
}

// Plans over the budget of listed files are shed and their tables planned
// again when they run: the root is cleaned all the same, with what a plan
// kept whole would have deleted.
func TestRetentionShedsPlansOverItsBudget(t *testing.T) {
	clean := func(kept int) map[string]int64 {
		f := newFixture(t, objstoretest.Local, 1)
		for _, n := range []string{"a", "b", "c"} {
			lancetest.LanceDB(t, f.store(0), lifecycle.TableDir(n))
		}
		w := f.worker(retentionOn(), 2*time.Hour)
		w.KeptFiles = kept
		rep, err := w.Pass(context.Background(), nil)
		require.NoError(t, err)
		out := map[string]int64{}
		for _, d := range rep.Roots[0].Retention {
			require.Equal(t, "cleaned", string(d.Action), d.Table)
			out[d.Table] = d.Objects
		}
		return out
	}
	require.Equal(t, clean(0), clean(1), "a budget of one file sheds every plan")
}
