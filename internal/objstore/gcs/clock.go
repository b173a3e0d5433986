package gcs

import (
	"context"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how the GCS store feeds its clock (objstore.DateClock,
// which owns the reading rule): the client sends through the clock's
// RoundTripper (open.go), which records the Date of every response, error
// answers included.

// Now reads the store's clock (objstore.DateClock.Now): the Date the
// service answered with, plus the local time elapsed since; without a
// fresh one it first reads the metadata of objstore.ClockProbeKey.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.clock.Now(ctx, s.URI(), s.ClockMaxAge, func(ctx context.Context) error {
		_, err := s.client.Objects.Get(s.loc.Bucket, s.root+objstore.ClockProbeKey).Context(ctx).Fields(objectFields).Do()
		return mapError(err)
	})
}
