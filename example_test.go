package reaper_test

import (
	"context"
	"errors"
	"fmt"
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

	_, err = ns.Purge(ctx, "events", reaper.PurgeOptions{})
	var nd *reaper.NotDueError
	fmt.Println("too early:", errors.Is(err, reaper.ErrNotPurgeable), errors.As(err, &nd))

	time.Sleep(time.Until(nd.PurgeAfter)) // the TTL passes
	res, err := ns.Purge(ctx, "events", reaper.PurgeOptions{})
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
