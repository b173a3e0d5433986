package azure

import (
	"context"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how the Azure store feeds its clock (objstore.DateClock,
// which owns the reading rule): a per-try pipeline policy records the Date
// of every response, error answers included.

// clockPolicy is the per-try pipeline policy that feeds the clock: it sees
// every raw response, whatever its status, before the SDK turns it into an
// error.
type clockPolicy struct{ c *objstore.DateClock }

func (p clockPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if resp != nil {
		p.c.Record(resp.Header, time.Now())
	}
	return resp, err
}

// Now reads the store's clock (objstore.DateClock.Now): the Date the
// service answered with, plus the local time elapsed since; without a
// fresh one it first sends one Get Blob Properties of
// objstore.ClockProbeKey.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.clock.Now(ctx, s.URI(), s.ClockMaxAge, func(ctx context.Context) error {
		_, err := s.client.NewBlobClient(s.root+objstore.ClockProbeKey).GetProperties(ctx, nil)
		return mapError(err)
	})
}
