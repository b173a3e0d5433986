package gcs

import (
	"errors"
	"fmt"

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
	case httpStatus(err) == 404:
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case httpStatus(err) == 412:
		return fmt.Errorf("%w: %w", objstore.ErrPrecondition, err)
	}
	if me := objstore.UnreachableError(err, fixEndpoint); me != nil {
		return me
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
func IsTransient(err error) bool { return objstore.ClassifyTransient(err, transientAnswer) }

// transientAnswer reads one GCS answer for IsTransient: 408, 429 and 5xx
// but 501 are transient, any other status is not, and an error without a
// status is left to the shared network check.
func transientAnswer(err error) (transient, decided bool) {
	switch httpStatus(err) {
	case 408, 429, 500, 502, 503, 504:
		return true, true
	case 0:
		return false, false
	}
	return false, true
}

// IsThrottle reports whether err is the service pushing back: 429 (rate
// limits), 503 and 500 (GCS asks for exponential backoff on both). The
// pacer slows the whole pass on these only; a reset connection, a 502/504
// from a proxy or a 408 is retried without slowing it. A batch is a
// throttle when any of its failed keys is.
func IsThrottle(err error) bool { return objstore.ClassifyThrottle(err, pushback) }

// pushback reports one answer that is GCS asking for fewer requests.
func pushback(err error) bool {
	switch httpStatus(err) {
	case 429, 500, 503:
		return true
	}
	return false
}
