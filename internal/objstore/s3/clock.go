package s3

import (
	"context"
	"time"
)

// Now is a placeholder until the Date header is read.
func (s *Store) Now(ctx context.Context) (time.Time, error) { return time.Now(), ctx.Err() }

// PruneEmpty does nothing: S3 has no directories; "folder" objects are
// objects and are walked and deleted as such.
func (s *Store) PruneEmpty(ctx context.Context, prefix string) error { return nil }
