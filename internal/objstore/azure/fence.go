package azure

import (
	"context"
	"fmt"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the fence on Azure: a lease holder may have lost its lease
// while paused anywhere above the backend, so the lease is asked
// immediately before each mutating request, and the request carries the
// fence's time limit as its deadline (as in package s3).

// fenced sends one mutating request: send must do nothing but call the
// client with the context it is given. A refusing fence sends nothing and
// returns an error wrapping objstore.ErrFenced; a request ended by the
// fence's time limit while ctx is alive returns objstore.ErrRequestDeadline.
func fenced(ctx context.Context, send func(rctx context.Context) error) error {
	rctx, cancel, err := objstore.FenceRequest(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return objstore.RequestError(ctx, rctx, send(rctx))
}

// PruneEmpty does nothing: Blob Storage (without a hierarchical namespace)
// has no directories. It still refuses under a refusing fence, as every
// mutating call does.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error {
	if err := objstore.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("prune empty %s: %w", prefix, err)
	}
	if _, err := objstore.CheckFence(ctx); err != nil {
		return fmt.Errorf("prune empty %s: %w", prefix, err)
	}
	return nil
}
