package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how a guard reads a table's control objects: its marker,
// lease, legal hold (object or folder), purge commit and retention record.
// Every one is named <name>.<suffix> (names.go), so on an object store one
// listing with the prefix "<name>." returns them all, with the ETags and
// LastModified a HEAD of each would: one request where a read per object
// was six. The listing also returns what other names that start with
// "<name>." hold (table "a.b" beside table "a": a.b.lance/, a.b.deleted,
// a.b.reaper-hold/): each entry is classified by the key table
// (classifyObject, classifyPrefix), and only this table's count. All of a
// table's control keys lie in [<name>., lastControlKey(name)] (a
// namespaced table's name less its "/") and a listing is sorted
// across its pages (objstore.Store), so the read stops after the page that
// passes lastControlKey; before that it follows every page, so a name with
// thousands of such siblings costs a page per thousand of those that sort
// before its own keys, and never misses one. It fails closed: an error on
// any page, or a key listed twice, fails the read and the guard with it; a
// listed object without an ETag (a listing may leave it empty) is read by
// key.
//
// On a local disk a listing reads the whole root directory whatever its
// prefix (objstore.ScansDirectories): a root of a million names would cost
// a million entries a batch. There the objects are read by key, a few
// syscalls each, and the hold's folder form by a listing of that folder
// alone, all at once.

// controlObjects is what the store held of one table's control objects
// when a guard read them.
type controlObjects struct {
	objects    map[entryKind]objstore.Object
	holdFolder bool
}

// object is the control object of kind, if the store held one.
func (c controlObjects) object(kind entryKind) (objstore.Object, bool) {
	o, ok := c.objects[kind]
	return o, ok
}

// held reports whether the table has a legal hold, in either form.
func (c controlObjects) held() bool {
	_, ok := c.objects[entryHold]
	return ok || c.holdFolder
}

// readControl reads name's control objects: on an object store every kind
// (one listing), on a local disk the kinds asked for, and the lease and
// the hold always.
func (ns *Namespace) readControl(ctx context.Context, name string, kinds []entryKind) (controlObjects, error) {
	if objstore.ScansDirectories(ns.store) {
		return ns.headControl(ctx, name, kinds)
	}
	c, err := ns.listControl(ctx, name)
	if err != nil {
		return c, err
	}
	return c, ns.fillETags(ctx, &c)
}

// listControl is the one listing of "<name>.".
func (ns *Namespace) listControl(ctx context.Context, name string) (controlObjects, error) {
	c := controlObjects{objects: map[entryKind]objstore.Object{}}
	stem := controlStem(name)
	last := lastControlKey(name)
	prefix := stem + "."
	err := ns.store.List(ctx, prefix, func(p objstore.Page) error {
		past := false
		for _, o := range p.Objects {
			if o.Key > last {
				past = true
				continue
			}
			if strings.HasPrefix(o.Key, HoldKey(name)+"/") {
				// A folder listed as an object (the delimiter rolls it up
				// into a prefix everywhere reaper runs): a hold all the same.
				c.holdFolder = true
				continue
			}
			n, kind := classifyObject(o.Key)
			if n != stem || kind == entryOther || kind == entryNotTable {
				continue
			}
			if _, dup := c.objects[kind]; dup {
				return fmt.Errorf("list %s: %s listed twice", prefix, o.Key)
			}
			c.objects[kind] = o
		}
		for _, pre := range p.Prefixes {
			if pre > last {
				past = true
				continue
			}
			if n, kind := classifyPrefix(pre); n == stem && kind == entryHold {
				c.holdFolder = true
			}
		}
		if past {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return c, err
	}
	return c, nil
}

// fillETags reads by key each listed object whose ETag the listing left
// empty (a guard compares them): one gone since is absent.
func (ns *Namespace) fillETags(ctx context.Context, c *controlObjects) error {
	unread := map[entryKind]string{}
	for kind, o := range c.objects {
		if o.ETag == "" && kind != entryHold {
			unread[kind] = o.Key
		}
	}
	var mu sync.Mutex
	return ns.headKinds(ctx, c, unread, &mu)
}

// headKinds reads keys (by kind) at once into c, under mu: one found is
// recorded, one gone is absent, a hold that is a folder sets holdFolder.
func (ns *Namespace) headKinds(ctx context.Context, c *controlObjects, keys map[entryKind]string, mu *sync.Mutex) error {
	var (
		wg     sync.WaitGroup
		failed error
	)
	for kind, key := range keys {
		wg.Go(func() {
			obj, err := ns.store.Head(ctx, key)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				c.objects[kind] = obj
			case kind == entryHold && errors.Is(err, objstore.ErrIsFolder):
				// (A local store's folder is also "not found" as an object.)
				c.holdFolder = true
			case errors.Is(err, objstore.ErrNotFound):
				delete(c.objects, kind)
			default:
				failed = first(failed, fmt.Errorf("read %s: %w", key, err))
			}
		})
	}
	wg.Wait()
	return failed
}

// controlKeys are the keys of a table's control objects by kind.
var controlKeys = map[entryKind]func(string) string{
	entryMarker: MarkerKey, entryLock: LockKey, entryHold: HoldKey, entryCommit: CommitKey, entryRetain: RetainKey,
}

// headControl reads the kinds asked for, the lease and the hold by key, and
// the hold's folder form by a listing of that folder, all at once.
func (ns *Namespace) headControl(ctx context.Context, name string, kinds []entryKind) (controlObjects, error) {
	c := controlObjects{objects: map[entryKind]objstore.Object{}}
	keys := map[entryKind]string{entryLock: LockKey(name), entryHold: HoldKey(name)}
	for _, k := range kinds {
		keys[k] = controlKeys[k](name)
	}
	var (
		mu         sync.Mutex
		folderErr  error
		folderDone = make(chan struct{})
	)
	go func() {
		defer close(folderDone)
		folder := HoldKey(name) + "/"
		err := ns.store.List(ctx, folder, func(p objstore.Page) error {
			if len(p.Objects)+len(p.Prefixes) > 0 {
				mu.Lock()
				c.holdFolder = true
				mu.Unlock()
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			folderErr = fmt.Errorf("read %s: %w", folder, err)
		}
	}()
	failed := ns.headKinds(ctx, &c, keys, &mu)
	<-folderDone
	return c, first(failed, folderErr)
}

// listedHold is the hold c found, with its reason: read whole (readHold)
// when it is an object; a hold gone since still stops this batch.
func (ns *Namespace) listedHold(ctx context.Context, name string, c controlObjects) (*Hold, error) {
	if _, object := c.object(entryHold); !object {
		return folderHold(name), nil
	}
	h, err := ns.readHold(ctx, name)
	if err != nil || h != nil {
		return h, err
	}
	return &Hold{Reason: fmt.Sprintf("%s was there when the guard read it, and is gone now; the next pass reads it again", HoldKey(name))}, nil
}
