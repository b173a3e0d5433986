package azure

import (
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// apiError is an Azure error answer, shortened: the SDK's own message spans
// a dozen lines with the XML body. It keeps the SDK error for errors.As.
type apiError struct {
	Status int
	Code   string
	err    *azcore.ResponseError
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("azure: HTTP %d", e.Status)
	}
	return fmt.Sprintf("azure: %s (HTTP %d)", e.Code, e.Status)
}

func (e *apiError) Unwrap() error { return e.err }

// mapError shortens an Azure answer and adds the objstore sentinel it
// stands for.
// fixEndpoint says where an Azure root's endpoint comes from.
const fixEndpoint = "check the storage option azure_storage_endpoint (or azure_storage_use_emulator and the account name), and that the server is up"

func mapError(err error) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		if me := objstore.UnreachableError(err, fixEndpoint); me != nil {
			return me
		}
		return err
	}
	ae := &apiError{Status: re.StatusCode, Code: re.ErrorCode, err: re}
	switch {
	case ae.Code == "ContainerNotFound":
		// A missing container is a misconfiguration, never a missing key.
		return ae
	case ae.Code == "BlobNotFound" || ae.Status == 404:
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, ae)
	case ae.Code == "BlobAlreadyExists" || ae.Code == "ConditionNotMet" || ae.Status == 412:
		// 409 BlobAlreadyExists answers If-None-Match: * on an existing
		// blob; 412 answers If-Match on another ETag.
		return fmt.Errorf("%w: %w", objstore.ErrPrecondition, ae)
	}
	return ae
}

func status(err error) (int, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status, ae.Code
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, ""
}

// IsTransient reports whether err is worth retrying: 500, 502, 503, 504,
// 429 and 408 answers, OperationTimedOut, network failures, and a request
// the fence's time limit ended. Cancellation, the objstore sentinels and
// other 4xx answers are permanent.
func IsTransient(err error) bool { return objstore.ClassifyTransient(err, transientAnswer) }

// transientAnswer reads one Azure answer for IsTransient: pushback, 408,
// a proxy's 502/504 and OperationTimedOut are transient, any other answer
// is not, and an error without one is left to the shared network check.
func transientAnswer(err error) (transient, decided bool) {
	if pushback(err) {
		return true, true
	}
	if st, code := status(err); st != 0 {
		return st == 408 || st == 502 || st == 504 || code == "OperationTimedOut", true
	}
	return false, false
}

// IsThrottle reports whether err is the store pushing back: 503 ServerBusy
// (and 503 in general), 429, and 500 InternalError or OperationTimedOut,
// which Azure answers under load too. A batch is a throttle when any of its
// failed keys is.
func IsThrottle(err error) bool { return objstore.ClassifyThrottle(err, pushback) }

func pushback(err error) bool {
	st, code := status(err)
	switch code {
	case "ServerBusy", "InternalError", "OperationTimedOut":
		return true
	}
	return st == 429 || st == 500 || st == 503
}
