package s3

import (
	"errors"
	"fmt"

	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/aws/smithy-go"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// mapError adds the objstore sentinel a failure stands for, keeping the SDK
// error in the chain for IsTransient and for the message.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	code, status := errorCode(err), httpStatus(err)
	if me := misconfigured(err); me != nil {
		// A missing bucket, credentials, region, endpoint or permission:
		// the operator's to fix (misconfig.go), never a missing key.
		return me
	}
	switch {
	case code == "NoSuchKey" || code == "NotFound" || status == 404:
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case code == "PreconditionFailed" || code == "ConditionalRequestConflict" || status == 412:
		// 409 ConditionalRequestConflict: a concurrent conditional write to
		// the same key won, so ours did not happen.
		return fmt.Errorf("%w: %w", objstore.ErrPrecondition, err)
	}
	return err
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	if re := responseError(err); re != nil {
		return re.HTTPStatusCode()
	}
	return 0
}

func responseError(err error) *smithyhttp.ResponseError {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// IsTransient reports whether err is worth retrying: server errors (500,
// 502, 503, 504), throttling (429, SlowDown), RequestTimeout, network
// failures, and a request the fence's time limit ended
// (objstore.ErrRequestDeadline: a retry asks the fence again). Cancellation,
// the other objstore sentinels (ErrFenced included) and other 4xx answers
// are permanent. A transient failure of a conditional write may still have
// landed; the retry wrapper must re-read before calling a later
// precondition failure lost.
func IsTransient(err error) bool { return objstore.ClassifyTransient(err, transientAnswer) }

// transientAnswer reads one S3 answer for IsTransient: pushback,
// RequestTimeout, a proxy's 502/504 and a request that was never sent are
// transient; other answers are decided by the shared network check.
func transientAnswer(err error) (transient, decided bool) {
	if pushback(err) || errorCode(err) == "RequestTimeout" {
		return true, true
	}
	switch httpStatus(err) {
	case 502, 504:
		return true, true
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return true, true
	}
	return false, false
}

// IsThrottle reports whether err is the store pushing back: 503 SlowDown or
// ServiceUnavailable, 429 and its throttling codes, and 500 InternalError
// (S3 answers overload with it too). The pacer slows the whole pass on
// these only: a reset connection, a 502/504 from a proxy or a
// RequestTimeout is retried but says nothing about the request rate, and
// counting it would pin a pass at the pacer's floor on a flaky network. A
// batch is a throttle when any of its failed keys is.
func IsThrottle(err error) bool { return objstore.ClassifyThrottle(err, pushback) }

// pushback reports a single answer that is the store asking for fewer
// requests; IsThrottle is exactly these, IsTransient includes them.
func pushback(err error) bool {
	switch errorCode(err) {
	case "SlowDown", "InternalError", "ServiceUnavailable",
		"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests":
		return true
	}
	switch httpStatus(err) {
	case 429, 500, 503:
		return true
	}
	return false
}
