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
// (absent, object or folder form), the root's PAUSE switch (absent, file or
// folder form) and its own commit (unchanged). Anything else stops the
// purge before the batch: a revive, a hold or a PAUSE placed mid-purge
// costs at most the batches already sent. The table's objects come from
// one read (guard_read.go: one listing of "<name>." on an object store),
// sent together with the PAUSE read (a listing and a HEAD): three requests
// a guard, one round trip.

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

// controlCheck judges one control object of the table as a guard read it
// (found false: the store held none).
type controlCheck struct {
	kind  entryKind
	judge func(obj objstore.Object, found bool) error
}

// check runs every re-check; the first failure in order of precedence (a
// lost lease, a hold, a pause, a changed marker or commit, a read error)
// is returned.
func (g *guard) check(ctx context.Context) error {
	checks := []controlCheck{{entryMarker, func(obj objstore.Object, found bool) error {
		return g.judgeSame(MarkerKey(g.name), g.markerETag, "marker", obj, found)
	}}}
	if g.commitETag != "" {
		checks = append(checks, controlCheck{entryCommit, func(obj objstore.Object, found bool) error {
			return g.judgeSame(CommitKey(g.name), g.commitETag, "purge commit", obj, found)
		}})
	}
	return g.ns.guardReads(ctx, "purge", g.name, g.lease, checks...)
}

// guardReads is the one guard of work under a table's lease, for purges
// and retention runs alike: it reads the table's control objects
// (readControl) together with the root's PAUSE switch, then judges from
// that one read the lease (lock.Lease.VerifyListed: the holder's own ETag,
// and the store's deadline), the legal hold and the caller's checks. It
// returns the first failure in order of precedence: a lost lease, a hold,
// a pause, a changed object (a *ConflictError or a stuck purge), a read
// error.
func (ns *Namespace) guardReads(ctx context.Context, op, name string, lease *lock.Lease, checks ...controlCheck) error {
	kinds := make([]entryKind, len(checks))
	for i, c := range checks {
		kinds[i] = c.kind
	}
	var (
		wg       sync.WaitGroup
		why      string
		pauseErr error
		control  controlObjects
		readErr  error
	)
	wg.Go(func() { why, pauseErr = ns.Paused(ctx) })
	wg.Go(func() { control, readErr = ns.readControl(ctx, name, kinds) })
	wg.Wait()

	var pausedErr, io error
	switch {
	case pauseErr != nil:
		io = fmt.Errorf("%w: cannot read %s (%w); treated as paused", ErrPaused, PauseKey, pauseErr)
	case why != "":
		pausedErr = fmt.Errorf("%s %q: %w: %s", op, name, ErrPaused, why)
	}
	if readErr != nil {
		// Nothing of the table can be judged; a lease lost in memory still
		// says so first.
		return first(lease.Check(), pausedErr, io, fmt.Errorf("%s %q: re-check %s*: %w", op, name, name+".", readErr))
	}
	leaseErr, holdErr, changeErr, readErr := ns.judgeControl(ctx, op, name, lease, control, checks)
	return first(leaseErr, holdErr, pausedErr, changeErr, io, readErr)
}

// judgeControl judges the lease, the hold and checks from one read of the
// table's control objects, returning each kind of failure apart.
func (ns *Namespace) judgeControl(ctx context.Context, op, name string, lease *lock.Lease, control controlObjects, checks []controlCheck) (leaseErr, holdErr, changeErr, io error) {
	fail := func(dst *error, err error) {
		if *dst == nil {
			*dst = err
		}
	}
	obj, found := control.object(entryLock)
	if err := lease.VerifyListed(ctx, obj, found); err != nil {
		if errors.Is(err, lock.ErrLost) {
			leaseErr = err
		} else {
			io = err
		}
	}
	if control.held() {
		h, err := ns.listedHold(ctx, name, control)
		if err != nil {
			fail(&io, err)
		} else {
			holdErr = heldError(op, name, h)
		}
	}
	for _, c := range checks {
		obj, found := control.object(c.kind)
		err := c.judge(obj, found)
		var ce *ConflictError
		switch {
		case err == nil:
		case errors.As(err, &ce), errors.Is(err, ErrStuck):
			fail(&changeErr, err)
		default:
			fail(&io, err)
		}
	}
	return leaseErr, holdErr, changeErr, io
}

// first is the first of errs that is not nil.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// same requires key to be the version read under the lease, read by key
// (the check between a batch's keys, batch_between.go).
func (g *guard) same(ctx context.Context, key, etag, what string) error {
	obj, err := g.ns.store.Head(ctx, key)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return g.judgeSame(key, etag, what, obj, false)
	case err != nil:
		return fmt.Errorf("purge %q: re-check %s: %w", g.name, key, err)
	}
	return g.judgeSame(key, etag, what, obj, true)
}

// judgeSame requires key, as read (found false: absent), to be the version
// read under the lease. Before the commit a change is a conflict: nothing
// was deleted. After it, the table is partly gone, and a marker or commit
// removed or rewritten by hand is a failure only a person can mend
// (purge_stuck.go).
func (g *guard) judgeSame(key, etag, what string, obj objstore.Object, found bool) error {
	var change string
	switch {
	case !found:
		change = fmt.Sprintf("the %s %s vanished during the purge (removed outside reaper's lease)", what, key)
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
