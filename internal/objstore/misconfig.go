package objstore

import "errors"

// ErrMisconfigured marks a store error that only the operator can fix, in
// the root's storage options or the environment: no or rejected
// credentials, the wrong region, an endpoint that cannot be reached, a
// missing bucket or directory, access denied. Backends return it as a
// *MisconfiguredError; the CLI prints its one line and exits 2.
var ErrMisconfigured = errors.New("store misconfigured")

// MisconfiguredError says in one line what is wrong and what to set. The
// backend's own error stays in the chain (errors.Is/As, retry
// classification, debug logs) but not in the message: an SDK chain such as
// "get identity: get credentials: failed to refresh cached credentials, no
// EC2 IMDS role found, ..." tells an operator less than the fix does.
type MisconfiguredError struct {
	// Problem is what is wrong ("no AWS credentials found"), Fix what to
	// set ("set AWS_PROFILE or ..."). Neither holds a secret.
	Problem, Fix string
	// Err is the backend's error.
	Err error
}

func (e *MisconfiguredError) Error() string { return e.Problem + "; " + e.Fix }

// Unwrap reports ErrMisconfigured and the backend's error.
func (e *MisconfiguredError) Unwrap() []error { return []error{ErrMisconfigured, e.Err} }
