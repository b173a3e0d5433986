package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// fixEndpoint says where a GCS root's endpoint comes from.
const fixEndpoint = "check the network path to storage.googleapis.com, or gcs_base_url in the google_service_account_key JSON for an emulator, and that the server is up"

// mapError adds the objstore sentinel a failure stands for, keeping the
// client's error in the chain for IsTransient and for the message.
func mapError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrBucketNotExist):
		// A missing bucket is a misconfiguration, never a missing key.
		return err
	case objstore.UnreachableError(err, fixEndpoint) != nil:
		return objstore.UnreachableError(err, fixEndpoint)
	case errors.Is(err, storage.ErrObjectNotExist) || httpStatus(err) == 404:
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case httpStatus(err) == 412:
		return fmt.Errorf("%w: %w", objstore.ErrPrecondition, err)
	}
	return err
}

func httpStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// IsTransient reports whether err is worth retrying: 408, 429, 500, 502,
// 503, 504, network failures, and a request the fence's time limit ended
// (objstore.ErrRequestDeadline: a retry asks the fence again).
// Cancellation, the other objstore sentinels (ErrFenced included) and other
// 4xx answers are permanent. A transient failure of a conditional write may
// still have landed; the retry wrapper re-reads before calling a later
// precondition failure lost.
func IsTransient(err error) bool {
	switch {
	case errors.Is(err, objstore.ErrRequestDeadline):
		return true
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, objstore.ErrFenced),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, objstore.ErrNotFound),
		errors.Is(err, objstore.ErrPrecondition),
		errors.Is(err, objstore.ErrInvalidKey):
		return false
	}
	var be *objstore.BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			if !IsTransient(f.Err) {
				return false
			}
		}
		return len(be.Failed) > 0
	}
	switch httpStatus(err) {
	case 408, 429, 500, 502, 503, 504:
		return true
	case 0:
	default:
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// IsThrottle reports whether err is the service pushing back: 429 (rate
// limits), 503 and 500 (GCS asks for exponential backoff on both). The
// pacer slows the whole pass on these only; a reset connection, a 502/504
// from a proxy or a 408 is retried without slowing it. A batch is a
// throttle when any of its failed keys is.
func IsThrottle(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var be *objstore.BatchError
	if errors.As(err, &be) {
		for _, f := range be.Failed {
			if IsThrottle(f.Err) {
				return true
			}
		}
		return false
	}
	switch httpStatus(err) {
	case 429, 500, 503:
		return true
	}
	return false
}
