package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns what a purge re-checks against the store immediately
// before its first delete and before each delete batch: its lease (read
// back, not only in memory), the marker (unchanged ETag), the legal hold
// (absent), the root's PAUSE switch (absent, file or folder form) and its own
// commit (unchanged). Anything else stops the purge before the batch: a
// revive, a hold or a PAUSE placed mid-purge costs at most the batches
// already sent. The five reads go out together; each is one request.

// ErrPaused: the root's PAUSE switch is on; nothing is purged.
var ErrPaused = errors.New("paused")

// guard re-checks one table under its lease.
type guard struct {
	ns         *Namespace
	name       string
	lease      *lock.Lease
	markerETag string
	// commitETag is the purge commit's ETag once written ("" before).
	commitETag string
}

// check runs every re-check; the first failure in order of precedence (a
// lost lease, a hold, a pause, a changed marker or commit, a read error)
// is returned.
func (g *guard) check(ctx context.Context) error {
	reads := []func(context.Context) error{
		func(ctx context.Context) error { return g.same(ctx, MarkerKey(g.name), g.markerETag, "marker") },
	}
	if g.commitETag != "" {
		reads = append(reads, func(ctx context.Context) error {
			return g.same(ctx, CommitKey(g.name), g.commitETag, "purge commit")
		})
	}
	return g.ns.guardReads(ctx, "purge", g.name, g.lease, reads...)
}

// guardReads sends together the reads every guard of work under a table's
// lease makes (the lease read back, the legal hold, the root's PAUSE
// switch) and its own reads of objects, and returns the first failure in
// order of precedence: a lost lease, a hold, a pause, a changed object (a
// *ConflictError or a stuck purge), a read error. Each read is one request.
func (ns *Namespace) guardReads(ctx context.Context, op, name string, lease *lock.Lease, objects ...func(context.Context) error) error {
	var (
		wg                                         sync.WaitGroup
		mu                                         sync.Mutex
		leaseErr, holdErr, pauseErr, changeErr, io error
	)
	fail := func(dst *error, err error) {
		mu.Lock()
		defer mu.Unlock()
		if *dst == nil {
			*dst = err
		}
	}
	wg.Go(func() {
		if err := lease.Verify(ctx); err != nil {
			if errors.Is(err, lock.ErrLost) {
				fail(&leaseErr, err)
			} else {
				fail(&io, err)
			}
		}
	})
	wg.Go(func() {
		h, err := ns.readHold(ctx, name)
		switch {
		case err != nil:
			fail(&io, err)
		case h != nil:
			fail(&holdErr, heldError(op, name, h))
		}
	})
	wg.Go(func() {
		why, err := ns.Paused(ctx)
		switch {
		case err != nil:
			fail(&io, fmt.Errorf("%w: cannot read %s (%w); treated as paused", ErrPaused, PauseKey, err))
		case why != "":
			fail(&pauseErr, fmt.Errorf("%s %q: %w: %s", op, name, ErrPaused, why))
		}
	})
	for _, read := range objects {
		wg.Go(func() {
			err := read(ctx)
			var ce *ConflictError
			switch {
			case err == nil:
			case errors.As(err, &ce), errors.Is(err, ErrStuck):
				fail(&changeErr, err)
			default:
				fail(&io, err)
			}
		})
	}
	wg.Wait()
	for _, err := range []error{leaseErr, holdErr, pauseErr, changeErr, io} {
		if err != nil {
			return err
		}
	}
	return nil
}

// same requires key to be the version read under the lease. Before the
// commit a change is a conflict: nothing was deleted. After it, the table is
// partly gone, and a marker or commit removed or rewritten by hand is a
// failure only a person can mend (purge_stuck.go).
func (g *guard) same(ctx context.Context, key, etag, what string) error {
	obj, err := g.ns.store.Head(ctx, key)
	var change string
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		change = fmt.Sprintf("the %s %s vanished during the purge (removed outside reaper's lease)", what, key)
	case err != nil:
		return fmt.Errorf("purge %q: re-check %s: %w", g.name, key, err)
	case obj.ETag != etag:
		change = fmt.Sprintf("the %s %s changed during the purge (written outside reaper's lease)", what, key)
	default:
		return nil
	}
	if g.commitETag == "" {
		return &ConflictError{Name: g.name, Reason: change + "; it stopped before its first delete"}
	}
	fix := fixMarker
	if key == CommitKey(g.name) {
		fix = fixCommit
	}
	return &StuckError{Name: g.name, Reason: change + "; it stopped before its next delete", Fix: fix}
}

// Paused reports why the root's pause switch is on ("" when it is off): an
// object named _reaper/PAUSE, or a folder _reaper/PAUSE/ holding anything
// (an S3 console folder is an object "_reaper/PAUSE/"; on a local disk a
// directory, even an empty one). The switch fails closed: an object at
// _reaper itself (a file, or a symbolic link to a switch folder shared by
// several roots, which a local root never follows) hides the switch, so it
// reads as paused, and an error reading either is returned (callers treat
// it as paused). It costs one listing and one HEAD, sent together.
func (ns *Namespace) Paused(ctx context.Context) (string, error) {
	var (
		wg      sync.WaitGroup
		why     string
		listErr error
		headErr error
	)
	wg.Go(func() { why, listErr = ns.pauseSwitch(ctx) })
	wg.Go(func() { _, headErr = ns.store.Head(ctx, pauseDir) })
	wg.Wait()
	switch {
	case why != "":
		return why, nil
	case headErr == nil:
		return fmt.Sprintf("paused: %s in the root is a file or a symbolic link, not a folder, so the switch %s cannot be read through it; remove it or make it a folder to resume", pauseDir, PauseKey), nil
	case listErr != nil:
		return "", listErr
	case !errors.Is(headErr, objstore.ErrNotFound):
		return "", fmt.Errorf("read %s: %w", pauseDir, headErr)
	}
	return "", nil
}

// pauseSwitch lists the switch itself: its object or folder form.
func (ns *Namespace) pauseSwitch(ctx context.Context) (string, error) {
	var why string
	err := ns.store.List(ctx, PauseKey, func(p objstore.Page) error {
		for _, o := range p.Objects {
			if o.Key == PauseKey || strings.HasPrefix(o.Key, PauseKey+"/") {
				why = "paused by " + PauseKey + " in the root; delete it to resume"
				return errStop
			}
		}
		for _, pre := range p.Prefixes {
			if pre == PauseKey+"/" {
				why = "paused by the folder " + PauseKey + "/ in the root; delete it to resume"
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", fmt.Errorf("read %s: %w", PauseKey, err)
	}
	return why, nil
}
