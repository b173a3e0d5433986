package local

import (
	"context"
	"time"
)

// Now is the clock the kernel stamps file times with: this host's.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// PruneEmpty is being rewritten; see the no-follow backend.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error { return nil }
