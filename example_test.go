package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lance-reaper/reaper"
)

// demoRoot makes a throwaway database root holding one Lance table.
func demoRoot(tables ...string) string {
	dir, err := os.MkdirTemp("", "reaper-example-")
	if err != nil {
		panic(err)
	}
	for _, t := range tables {
		for _, f := range []string{"_versions/1.manifest", "data/0a1b.lance"} {
			p := filepath.Join(dir, t+".lance", f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				panic(err)
			}
			if err := os.WriteFile(p, []byte("lance bytes"), 0o644); err != nil {
				panic(err)
			}
		}
	}
	return dir
}

// Drop soft-deletes a table; Status shows it until the TTL passes and a
// purge reclaims it.
func Example() {
	ctx := context.Background()
	root := demoRoot("events", "users")
	defer os.RemoveAll(root)

	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	// A TTL of 50ms, so the example can watch it pass. Due-ness is judged
	// by the store's clock (here the kernel's, which stamps the marker).
	if _, err := ns.Drop(ctx, "events", 50*time.Millisecond); err != nil {
		panic(err)
	}
	st, _ := ns.Status(ctx, "events", "users")
	for _, s := range st {
		fmt.Println(s.Name, s.State)
	}

	// A table dropped for a day is not purged before its day is over.
	if _, err := ns.Drop(ctx, "users", 24*time.Hour); err != nil {
		panic(err)
	}
	_, err = ns.Purge(ctx, "users", reaper.PurgeOptions{})
	var nd *reaper.NotDueError
	fmt.Println("too early:", errors.Is(err, reaper.ErrNotPurgeable), errors.As(err, &nd))

	waitDue(ctx, ns, "events") // the 50ms pass
	// 50ms is below the TTL floor (DefaultMinTTL, 1h) a purge applies
	// unless told otherwise.
	res, err := ns.Purge(ctx, "events", reaper.PurgeOptions{AllowShortTTL: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, res.Objects, "objects")
	st, _ = ns.Status(ctx, "events")
	fmt.Println(st[0].Name, st[0].State)
	// Output:
	// events soft_deleted
	// users exists
	// too early: true true
	// purged 2 objects
	// events not_found
}

// Revive undoes a drop before the purge.
func ExampleNamespace_Revive() {
	ctx := context.Background()
	root := demoRoot("orders")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, "file://"+root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	_, _ = ns.Drop(ctx, "orders", 0)
	_, err = ns.Drop(ctx, "orders", 0)
	fmt.Println("second drop:", errors.Is(err, reaper.ErrAlreadyDeleted))
	if err := ns.Revive(ctx, "orders"); err != nil {
		panic(err)
	}
	st, _ := ns.Status(ctx, "orders")
	fmt.Println(st[0].State)
	// Output:
	// second drop: true
	// exists
}

// ListPurgeable is what a scheduler runs: every due table, oldest first.
func ExampleNamespace_ListPurgeable() {
	ctx := context.Background()
	root := demoRoot("a", "b", "c")
	defer os.RemoveAll(root)
	ns, _ := reaper.Open(ctx, root, reaper.Options{})
	a, _ := ns.Drop(ctx, "a", 50*time.Millisecond)
	_, _ = ns.Drop(ctx, "b", 30*24*time.Hour)

	// Due-ness is judged by the store's clock; a later now cannot make a
	// table due early (it can only make the list stricter).
	time.Sleep(time.Until(time.UnixMilli(a.DeletedAtMs + a.TTLMs + 50)))
	due, err := ns.ListPurgeable(ctx, time.Time{})
	if err != nil {
		panic(err)
	}
	for _, t := range due {
		fmt.Println(t.Name, "is due")
	}
	// Output:
	// a is due
}

// waitDue returns once the store's clock has passed name's purge time.
func waitDue(ctx context.Context, ns *reaper.Namespace, name string) {
	for {
		st, err := ns.Status(ctx, name)
		if err != nil {
			panic(err)
		}
		now, err := ns.StoreNow(ctx)
		if err != nil {
			panic(err)
		}
		if st[0].Due(now) {
			return
		}
		time.Sleep(time.Until(st[0].PurgeAfter))
	}
}

// Drop writes the marker Lance writes; the table's data stays until a purge.
func ExampleNamespace_Drop() {
	ctx := context.Background()
	root := demoRoot("events")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	m, err := ns.Drop(ctx, "events", 24*time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println("ttl:", time.Duration(m.TTLMs)*time.Millisecond)
	_, err = ns.Drop(ctx, "events", time.Hour) // the first marker's clock is kept
	fmt.Println("again:", errors.Is(err, reaper.ErrAlreadyDeleted))
	_, err = ns.Drop(ctx, "nope", 0)
	fmt.Println("unknown:", errors.Is(err, reaper.ErrNotFound))
	// Output:
	// ttl: 24h0m0s
	// again: true
	// unknown: true
}

// Status reports every name of a root, or the names asked for.
func ExampleNamespace_Status() {
	ctx := context.Background()
	root := demoRoot("a", "b")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Drop(ctx, "b", time.Hour); err != nil {
		panic(err)
	}
	all, err := ns.Status(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range all {
		fmt.Println(s.Name, s.State)
	}
	some, _ := ns.Status(ctx, "c")
	fmt.Println(some[0].Name, some[0].State)
	// Output:
	// a exists
	// b soft_deleted
	// c not_found
}

// EachStatus hands over each name as the root's listing passes it, for a
// root too big to hold as a slice; now is the store's time the states were
// judged at.
func ExampleNamespace_EachStatus() {
	ctx := context.Background()
	root := demoRoot("a", "b")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Drop(ctx, "b", time.Hour); err != nil {
		panic(err)
	}
	err = ns.EachStatus(ctx, func(s reaper.TableStatus, now time.Time) error {
		fmt.Println(s.Name, s.State, "due:", s.Due(now))
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// a exists due: false
	// b soft_deleted due: false
}

// PlanPurge splits a root the way a pass sees it: what is due, what is
// not yet, what is held, what needs an operator.
func ExampleNamespace_PlanPurge() {
	ctx := context.Background()
	root := demoRoot("old", "new", "kept")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	for name, ttl := range map[string]time.Duration{"old": 10 * time.Millisecond, "new": 24 * time.Hour, "kept": 10 * time.Millisecond} {
		if _, err := ns.Drop(ctx, name, ttl); err != nil {
			panic(err)
		}
	}
	if _, err := ns.Hold(ctx, "kept", "litigation #42"); err != nil {
		panic(err)
	}
	waitDue(ctx, ns, "old")
	plan, err := ns.PlanPurge(ctx, time.Time{})
	if err != nil {
		panic(err)
	}
	fmt.Println("due:", len(plan.Due), plan.Due[0].Name)
	fmt.Println("not due:", len(plan.NotDue), plan.NotDue[0].Name)
	fmt.Println("held:", len(plan.Held), plan.Held[0].Name)
	// Output:
	// due: 1 old
	// not due: 1 new
	// held: 1 kept
}

// Purge reclaims one due table, reporting progress after each delete
// batch; cancelling ctx stops it at the next batch and leaves it finishable
// by a later purge.
func ExampleNamespace_Purge() {
	ctx := context.Background()
	root := demoRoot("events")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Drop(ctx, "events", 10*time.Millisecond); err != nil {
		panic(err)
	}
	waitDue(ctx, ns, "events")

	ctx, cancel := context.WithTimeout(ctx, time.Minute) // the caller's limit
	defer cancel()
	res, err := ns.Purge(ctx, "events", reaper.PurgeOptions{
		AllowShortTTL: true, // 10ms is below the TTL floor (DefaultMinTTL)
		Progress:      func(objects, bytes int64) { fmt.Println("deleted so far:", objects, "objects") },
	})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		fmt.Println("stopped; a later purge finishes it")
		return
	}
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, res.Objects, "objects", res.Bytes, "bytes")
	// Output:
	// deleted so far: 1 objects
	// deleted so far: 2 objects
	// purged 2 objects 22 bytes
}

// Hold keeps a table whatever its TTL (a legal hold); Release lifts it.
func ExampleNamespace_Hold() {
	ctx := context.Background()
	root := demoRoot("ledger")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Hold(ctx, "ledger", "litigation #42"); err != nil {
		panic(err)
	}
	if _, err := ns.Drop(ctx, "ledger", 10*time.Millisecond); err != nil {
		panic(err)
	}
	waitDue(ctx, ns, "ledger")
	_, err = ns.Purge(ctx, "ledger", reaper.PurgeOptions{})
	fmt.Println("held:", errors.Is(err, reaper.ErrHeld))

	if err := ns.Release(ctx, "ledger"); err != nil {
		panic(err)
	}
	res, err := ns.Purge(ctx, "ledger", reaper.PurgeOptions{AllowShortTTL: true}) // 10ms: below the TTL floor
	if err != nil {
		panic(err)
	}
	fmt.Println("released:", res.Outcome)
	// Output:
	// held: true
	// released: purged
}

// PurgeRoots runs one pass over many roots with every safety rail of
// `reaper purge`: an on-demand purge from a service.
func ExamplePurgeRoots() {
	ctx := context.Background()
	a, b := demoRoot("events", "users"), demoRoot("orders")
	defer os.RemoveAll(a)
	defer os.RemoveAll(b)
	for _, r := range []struct{ root, table string }{{a, "events"}, {b, "orders"}} {
		ns, err := reaper.Open(ctx, r.root, reaper.Options{})
		if err != nil {
			panic(err)
		}
		if _, err := ns.Drop(ctx, r.table, 10*time.Millisecond); err != nil {
			panic(err)
		}
		waitDue(ctx, ns, r.table)
	}

	rep, err := reaper.PurgeRoots(ctx, reaper.PassOptions{
		Roots: []reaper.Root{{URI: a}, {URI: b}},
		// These markers' TTL is below safety.min_ttl (1h): a pass skips
		// them unless told otherwise.
		Settings: map[string]string{"safety.allow_short_ttl": "true"},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("roots:", len(rep.Roots), "purged:", rep.Totals().Purged, "result:", rep.Result())
	// Each root's decisions: All yields every one (Decisions holds those a
	// report keeps whole: errors, problems, short TTLs).
	for _, rr := range rep.Roots {
		for d := range rr.All() {
			fmt.Println(d.Table, d.Action, d.Reason)
		}
	}
	// Unordered output:
	// roots: 2 purged: 2 result: success
	// events purged due
	// orders purged due
}

// Release lifts a legal hold; releasing a table without one is ErrNotFound.
func ExampleNamespace_Release() {
	ctx := context.Background()
	root := demoRoot("ledger")
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Hold(ctx, "ledger", "audit"); err != nil {
		panic(err)
	}
	fmt.Println(ns.Release(ctx, "ledger"))
	fmt.Println(errors.Is(ns.Release(ctx, "ledger"), reaper.ErrNotFound))
	// Output:
	// <nil>
	// true
}

// lanceDBRoot makes a throwaway database root holding "events", a table
// LanceDB 0.39 wrote (internal/lance/testdata): six versions, a deletion
// file, a bitmap index, a tag "release" on version 2.
func lanceDBRoot() string {
	dir, err := os.MkdirTemp("", "reaper-example-")
	if err != nil {
		panic(err)
	}
	src := filepath.Join("internal", "lance", "testdata", "lancedb-0.39", "t.lance")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p)
		switch {
		case err != nil:
			return err
		case rel == "tree" || rel == filepath.Join("_refs", "branches"):
			return filepath.SkipDir // its branch names main by the path it was written at
		case d.IsDir():
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "events.lance", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, body, 0o644)
	})
	if err != nil {
		panic(err)
	}
	return dir
}

// PlanRetention says what version retention would remove from each live
// table, as Lance's cleanup_old_versions would, without deleting anything:
// the versions kept and why, the versions removed, every file with its
// size and why. Its Bytes beside TableBytes is what old versions cost.
func ExampleNamespace_PlanRetention() {
	ctx := context.Background()
	root := lanceDBRoot()
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{})
	if err != nil {
		panic(err)
	}
	// Every version written before a minute from now: the table was copied
	// just now, and a version goes only once the store's clock also dates
	// its manifest before the cutoff.
	plans, err := ns.PlanRetention(ctx, reaper.RetentionPolicy{Before: time.Now().Add(time.Minute), KeepVersions: 2})
	if err != nil {
		panic(err)
	}
	for _, p := range plans {
		fmt.Println(p.Name, p.Result, "versions:", p.Versions, "removed:", p.Removed, "files:", len(p.Files))
		for _, k := range p.Kept {
			fmt.Println("  keeps", k.Version, "-", k.Why)
		}
		fmt.Println("  reclaims a share of the table:", p.Bytes > 0 && p.Bytes < p.TableBytes)
	}
	// Output:
	// events planned versions: 6 removed: [1 3 4] files: 7
	//   keeps 2 - tagged release
	//   keeps 5 - among the newest 2
	//   keeps 6 - latest
	//   reclaims a share of the table: true
}

// Retain removes the old versions of one live table under its lease,
// beside LanceDB writers, and every file only they referenced; the floor
// (RetainOptions.MinTTL, 1h by default) refuses a cutoff that recent unless
// AllowShortTTL. A second run finds nothing to do.
func ExampleNamespace_Retain() {
	ctx := context.Background()
	root := lanceDBRoot()
	defer os.RemoveAll(root)
	ns, err := reaper.Open(ctx, root, reaper.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	policy := reaper.RetentionPolicy{Before: time.Now().Add(time.Minute), KeepVersions: 2}
	_, err = ns.Retain(ctx, "events", reaper.RetainOptions{Policy: policy})
	fmt.Println(errors.Is(err, reaper.ErrShortTTL))

	res, err := ns.Retain(ctx, "events", reaper.RetainOptions{Policy: policy, AllowShortTTL: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, "versions removed:", res.VersionsRemoved, "objects:", res.Objects)
	res, err = ns.Retain(ctx, "events", reaper.RetainOptions{Policy: policy, AllowShortTTL: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome)
	// Output:
	// true
	// cleaned versions removed: 3 objects: 7
	// nothing_to_do
}
