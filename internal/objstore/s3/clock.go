package s3

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns how the S3 store feeds its clock (objstore.DateClock,
// which owns the reading rule): an SDK middleware records the Date of every
// response, error answers included.

// clockMiddlewareID names the Date-capturing middleware in the SDK stack.
const clockMiddlewareID = "reaper.StoreClock"

// answer is what one call's middleware saw of its response.
type answer struct {
	date time.Time // its Date; zero when it had none
}

// observe is the per-call SDK option every request of the store carries: a
// Deserialize-step middleware, innermost so it sees the raw response of
// every status before any error handling, that records the response's Date
// in the store's clock and, when dst is not nil, in dst. Passed per call,
// it leaves fakes of the API interface working.
func (s *Store) observe(dst *answer) func(*s3.Options) {
	mw := middleware.DeserializeMiddlewareFunc(clockMiddlewareID, func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil && resp.Response != nil {
			date, _ := s.clock.Record(resp.Header, time.Now())
			if dst != nil {
				dst.date = date
			}
		}
		return out, md, err
	})
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Deserialize.Add(mw, middleware.After)
		})
	}
}

// Now reads the store's clock (objstore.DateClock.Now): the greatest Date
// the server answered with, plus the local time elapsed since; without a
// fresh one it first sends one HEAD of objstore.ClockProbeKey.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.clock.Now(ctx, s.URI(), s.ClockMaxAge, func(ctx context.Context) error {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
			Bucket: aws.String(s.loc.Bucket),
			Key:    aws.String(s.root + objstore.ClockProbeKey),
		}, s.observe(nil))
		return mapError(err)
	})
}
