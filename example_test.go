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

	// A clock we control, so the example can jump past the TTL.
	now := time.Now()
	ns, err := reaper.Open(ctx, root, reaper.Options{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	if _, err := ns.Drop(ctx, "events", time.Hour); err != nil {
		panic(err)
	}
	st, _ := ns.Status(ctx, "events", "users")
	for _, s := range st {
		fmt.Println(s.Name, s.State)
	}

	_, err = ns.Purge(ctx, "events", reaper.PurgeOptions{})
	fmt.Println("too early:", errors.Is(err, reaper.ErrNotPurgeable))

	now = now.Add(time.Hour)
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
	// too early: true
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
	_, _ = ns.Drop(ctx, "a", time.Hour)
	_, _ = ns.Drop(ctx, "b", 30*24*time.Hour)

	due, err := ns.ListPurgeable(ctx, time.Now().Add(2*time.Hour))
	if err != nil {
		panic(err)
	}
	for _, t := range due {
		fmt.Println(t.Name, "is due")
	}
	// Output:
	// a is due
}
