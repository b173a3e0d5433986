package objstoretest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Pauser wraps a real store and freezes chosen calls, as a process stopped
// between two steps (GC, SIGSTOP, a frozen VM) would be: the call blocks
// before it reaches the inner store until the test releases it. Backends
// ask the lease's fence below this wrapper, so a released call meets the
// fence exactly as a resumed process would.
//
// Hooks are one-shot: PauseBefore arms one, the first matching call takes
// it. Calls with no armed hook go straight through.
type Pauser struct {
	objstore.Store

	mu    sync.Mutex
	hooks []*Pause
}

// Pause is one armed pause point.
type Pause struct {
	op      Op
	match   func(key string) bool
	skip    int
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

// Op names a Store method a Pause can stop.
type Op string

// The operations a Pause can stop. OpWalk stops a walk after its first
// page was handed to the caller, before the next one is read (a walk that
// finds nothing never stops there); OpWalkStart stops it before it reads
// anything.
const (
	OpDeleteBatch   Op = "delete_batch"
	OpDelete        Op = "delete"
	OpDeleteIfMatch Op = "delete_if_match"
	// OpDeleteIfMatchAnswer freezes a conditional delete after it reached
	// the store, before its answer returns; released, the caller gets
	// objstore.ErrRequestDeadline, as a process stopped with the request
	// in flight finds it when it resumes past the request's deadline.
	OpDeleteIfMatchAnswer Op = "delete_if_match_answer"
	OpPutIfAbsent         Op = "put_if_absent"
	OpPutIfMatch          Op = "put_if_match"
	OpWalk                Op = "walk"
	OpWalkStart           Op = "walk_start"
	OpHead                Op = "head"
	OpGet                 Op = "get"
)

var _ objstore.Store = (*Pauser)(nil)

// NewPauser wraps s.
func NewPauser(s objstore.Store) *Pauser { return &Pauser{Store: s} }

// Unwrap returns the wrapped store.
func (p *Pauser) Unwrap() objstore.Store { return p.Store }

// PauseBefore arms a pause on the skip+1-th call of op whose key (for a
// batch: any of its keys; for a walk: its prefix) has the given prefix.
func (p *Pauser) PauseBefore(op Op, keyPrefix string, skip int) *Pause {
	pa := &Pause{
		op: op, skip: skip,
		match:   func(k string) bool { return strings.HasPrefix(k, keyPrefix) },
		reached: make(chan struct{}), release: make(chan struct{}),
	}
	p.mu.Lock()
	p.hooks = append(p.hooks, pa)
	p.mu.Unlock()
	return pa
}

// Reached is closed once a call is frozen at the pause.
func (pa *Pause) Reached() <-chan struct{} { return pa.reached }

// Release lets the frozen call go on (to the inner store). It is safe to
// call more than once, and before the pause is reached (the call then does
// not block).
func (pa *Pause) Release() { pa.once.Do(func() { close(pa.release) }) }

// take returns the armed pause for a call of op on keys, if any.
func (p *Pauser) take(op Op, keys ...string) *Pause {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pa := range p.hooks {
		if pa.op != op {
			continue
		}
		hit := false
		for _, k := range keys {
			hit = hit || pa.match(k)
		}
		if !hit {
			continue
		}
		if pa.skip > 0 {
			pa.skip--
			continue
		}
		p.hooks = append(p.hooks[:i], p.hooks[i+1:]...)
		return pa
	}
	return nil
}

// wait freezes the caller at pa until it is released or ctx ends.
func (pa *Pause) wait(ctx context.Context) error {
	if pa == nil {
		return nil
	}
	close(pa.reached)
	select {
	case <-pa.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DeleteBatch may freeze before the batch reaches the store.
func (p *Pauser) DeleteBatch(ctx context.Context, keys []string) error {
	if err := p.take(OpDeleteBatch, keys...).wait(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return p.Store.DeleteBatch(ctx, keys)
}

// Delete may freeze before the delete reaches the store.
func (p *Pauser) Delete(ctx context.Context, key string) error {
	if err := p.take(OpDelete, key).wait(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return p.Store.Delete(ctx, key)
}

// DeleteIfMatch may freeze before the delete reaches the store.
func (p *Pauser) DeleteIfMatch(ctx context.Context, key, etag string) error {
	if err := p.take(OpDeleteIfMatch, key).wait(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	err := p.Store.DeleteIfMatch(ctx, key, etag)
	if pa := p.take(OpDeleteIfMatchAnswer, key); pa != nil {
		if werr := pa.wait(context.WithoutCancel(ctx)); werr != nil {
			return werr
		}
		if err == nil {
			return fmt.Errorf("delete if match %s: %w (its answer was lost while the caller was frozen)", key, objstore.ErrRequestDeadline)
		}
	}
	return err
}

// PutIfAbsent may freeze before the write reaches the store.
func (p *Pauser) PutIfAbsent(ctx context.Context, key string, body []byte) (objstore.Object, error) {
	if err := p.take(OpPutIfAbsent, key).wait(context.WithoutCancel(ctx)); err != nil {
		return objstore.Object{}, err
	}
	return p.Store.PutIfAbsent(ctx, key, body)
}

// PutIfMatch may freeze before the write reaches the store.
func (p *Pauser) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (objstore.Object, error) {
	if err := p.take(OpPutIfMatch, key).wait(context.WithoutCancel(ctx)); err != nil {
		return objstore.Object{}, err
	}
	return p.Store.PutIfMatch(ctx, key, body, etag)
}

// Head may freeze before the read reaches the store.
func (p *Pauser) Head(ctx context.Context, key string) (objstore.Object, error) {
	if err := p.take(OpHead, key).wait(context.WithoutCancel(ctx)); err != nil {
		return objstore.Object{}, err
	}
	return p.Store.Head(ctx, key)
}

// Get may freeze before the read reaches the store.
func (p *Pauser) Get(ctx context.Context, key string, limit int64) ([]byte, objstore.Object, error) {
	if err := p.take(OpGet, key).wait(context.WithoutCancel(ctx)); err != nil {
		return nil, objstore.Object{}, err
	}
	return p.Store.Get(ctx, key, limit)
}

// Walk may freeze before it starts, or after its first page, before the
// rest is read.
func (p *Pauser) Walk(ctx context.Context, prefix string, fn func([]objstore.Object) error) error {
	if err := p.take(OpWalkStart, prefix).wait(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	pa := p.take(OpWalk, prefix)
	first := true
	return p.Store.Walk(ctx, prefix, func(objs []objstore.Object) error {
		if err := fn(objs); err != nil {
			return err
		}
		if first {
			first = false
			return pa.wait(context.WithoutCancel(ctx))
		}
		return nil
	})
}
